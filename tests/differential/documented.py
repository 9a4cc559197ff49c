"""The differences from OpenClaw 2026.9.6 that clawbus keeps on purpose, each with the row of the
"Differences from OpenClaw 2026.9.6" table in docs/contract.md that says why.

An entry covers the differences of one ``kind`` (missing, extra, type, length, value, text, status, media,
shape, content) whose call matches ``call`` and whose path matches ``path``. Both are patterns: ``*`` in a
call name matches any characters; in a path, ``[*]`` matches any list index, ``*`` any one key and ``**``
any run of keys. For example::

    Documented("*", "result.details.sessions[*].transcriptPath", "extra", "transcript-path"),

says every listing's rows may carry ``transcriptPath``, for the reason in the row ``transcript-path``. A
call is ``documented`` when every one of its differences is covered, ``differs`` otherwise.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cached_property

from tests.differential.compare import KINDS, Difference


@dataclass(frozen=True)
class Documented:
    call: str
    path: str
    kind: str
    reason: str  # the row id in docs/contract.md, "Differences from OpenClaw 2026.9.6"
    # The configurations it holds in (tests/differential/clawbus_side.py), a pattern: every one by default.
    configuration: str = "*"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown kind {self.kind!r} (one of {', '.join(KINDS)})")

    @cached_property
    def _path(self) -> re.Pattern[str]:
        pattern = re.escape(self.path)
        pattern = pattern.replace(r"\[\*\]", r"\[(?:\d+|\*)\]")
        pattern = pattern.replace(r"\*\*", ".*").replace(r"\*", r"[^.\[\]]+")
        return re.compile(pattern + r"\Z")

    def covers(self, call: str, difference: Difference, configuration: str = "opened") -> bool:
        return (
            difference.kind == self.kind
            and fnmatch.fnmatchcase(call, self.call)
            and fnmatch.fnmatchcase(configuration, self.configuration)
            and self._path.match(difference.path) is not None
        )


_STATUS_FIELDS = (
    "modelRef",
    "modelSource",
    "thinking",
    "totalTokens",
    "estimatedCostUsd",
    "runsQueued",
    "runsRunning",
    "queueMode",
    "queueModeSource",
    "childrenPending",
    "state",
    "lastRunStatus",
    "lastRunChain",
    "spawnDepth",
    "role",
    "spentUsd",
    "spentTokens",
    "budget",
)
_ROW_EXTRAS = (
    "transcriptPath",
    "systemSent",
    "thinkingLevel",
    "sendPolicy",
    "queueMode",
    "lastChannel",
    "lastTo",
    "lastAccountId",
    "deliveryContext",
    "spawnedBy",
    "spawnDepth",
    "role",
    "estimatedCostUsd",
    "startedAt",
    "endedAt",
    "runtimeMs",
)
_ERROR_RESULT = ("status", "error")
_HISTORY_KEYS = (
    "sessionKey",
    "messages",
    "truncated",
    "droppedMessages",
    "contentTruncated",
    "contentRedacted",
    "bytes",
    "pendingInputs",
)
# Calls whose answers follow from how a sub-agent's completion reaches its requester (`completions`).
_AFTER_CHILD = (
    "sessions_history_main_after_child",
    "sessions_history_main_final",
    "subagents_list_after_child",
    "subagents_list_recent_minutes",
    "subagents_list_after_cleanup",
    "subagents_list_final",
    "sessions_list_after_child",
    "sessions_list_final*",
    "sessions_list_previews_and_titles",
)
# The OpenAI-compatible requests' sessions and the exchanges whose transcripts hold their runs.
_OPENAI_RUNS = (
    "sessions_history_chat_*",
    "sessions_history_session_header",
    "sessions_history_responses_user",
    "sessions_history_peer_*",
    "sessions_history_limit_string",
    "sessions_list_message_limit",
    "sessions_list_final_message_limit",
)


def _each(call: str, parent: str, keys: tuple[str, ...], kind: str, reason: str) -> tuple[Documented, ...]:
    return tuple(Documented(call, f"{parent}.{key}" if parent else key, kind, reason) for key in keys)


DOCUMENTED: tuple[Documented, ...] = (
    Documented("*", "error.field", "extra", "field-name"),
    # clawbus's own keys beside the release's.
    Documented("sessions_send*", "result.details.flowId", "extra", "own-keys"),
    *_each("session_status*", "result.details", _STATUS_FIELDS, "extra", "own-keys"),
    Documented("subagents*", "result.details.count", "extra", "own-keys"),
    Documented("subagents*", "result.details.subagents", "extra", "own-keys"),
    *_each("sessions_list*", "result.details.sessions[*]", _ROW_EXTRAS, "extra", "row-extras"),
    Documented(
        "sessions_history*", "result.details.messages[*].provenance.sourceChannel", "extra", "provenance"
    ),
    Documented(
        "sessions_history*", "result.details.messages[*].provenance.sourceRunId", "extra", "provenance"
    ),
    Documented(
        "sessions_list*", "result.details.sessions[*].messages[*].provenance.**", "extra", "provenance"
    ),
    # What each store counts for itself.
    Documented("sessions_history*", "result.details.bytes", "value", "history-numbers"),
    Documented("sessions_history*", "result.details.totalMessages", "value", "history-numbers"),
    Documented("sessions_history*", "result.details.messages[*].__openclaw.seq", "value", "history-numbers"),
    Documented(
        "sessions_list*", "result.details.sessions[*].messages[*].__openclaw.seq", "value", "history-numbers"
    ),
    *(Documented(call, "**.__openclaw.runId", "value", "openai-runs") for call in _OPENAI_RUNS),
    # Texts clawbus words its own way.
    Documented("http_invalid_json", "error.message", "text", "json-text"),
    Documented("session_status*", "result.details.statusText", "text", "status-card"),
    Documented("sessions_spawn_unknown_model", "result.details.error", "text", "spawn-model"),
    Documented("session_status_child*", "result.details.stateVersion", "value", "state-version"),
    # Each session's own count of its changes (the release's: one counter for every session's events).
    Documented("sessions_list*", "result.details.sessions[*].stateVersion", "value", "state-version"),
    Documented("sessions_list*", "result.details.sessions[*].stateVersion", "missing", "state-version"),
    Documented("sessions_list*", "result.details.sessions[*].stateVersion", "extra", "state-version"),
    Documented("subagents_list*", "result.details.**.execution.lastActivityAt", "missing", "activity-time"),
    # Never a 500 for bad input.
    *(
        entry
        for call in ("session_status_unknown_*", "sessions_history_deleted_child")
        for entry in (
            Documented(call, "", "status", "never-500"),
            Documented(call, "", "shape", "never-500"),
            Documented(call, "ok", "value", "never-500"),
            Documented(call, "error", "missing", "never-500"),
            Documented(call, "result", "extra", "never-500"),
            *_each(call, "result.details", _ERROR_RESULT, "extra", "never-500"),
            *_each(call, "result.details", _HISTORY_KEYS, "missing", "never-500"),
        )
    ),
    # subagents: clawbus's own kill action, which the release does not have.
    *_each("subagents_kill_all", "result.details", ("action", "killed"), "extra", "subagents-actions"),
    *_each("subagents_kill_all", "result.details", _ERROR_RESULT, "missing", "subagents-actions"),
    # How a sub-agent's completion reaches its requester, and what follows from it.
    *(
        Documented(call, path, kind, "completions")
        for call in _AFTER_CHILD
        for path, kind in (
            ("result.details.messages", "length"),
            ("result.details.messages[*].**", "value"),
            ("result.details.messages[*].**", "missing"),
            ("result.details.messages[*].**", "extra"),
            ("result.details.messages[*].**", "type"),
            ("result.details.text", "text"),
            ("result.details.**.deliveryStatus", "value"),
            # A child deleted at its cleanup: the release shows its tokens until it deletes its session,
            # which it does once its requester took the completion in (on the same call, by timing).
            ("result.details.recent[*].totalTokens", "missing"),
            # The release drops that child's row once its requester's turn took the completion in, and
            # orders its tasks by its own late delivery: both by timing on the same call.
            ("result.details.total", "value"),
            ("result.details.recent", "length"),
            ("result.details.recent[*].**", "value"),
            ("result.details.recent[*].**", "missing"),
            ("result.details.recent[*].**", "extra"),
            ("result.details.tasks[*].runtime", "value"),
            ("result.details.tasks[*].**", "value"),
            ("result.details.tasks[*].progressSummary", "missing"),
            ("result.details.tasks[*].progressSummary", "extra"),
            ("result.details.tasks[*].terminalSummary", "missing"),
            ("result.details.tasks[*].terminalSummary", "extra"),
            ("result.details.sessions[*].**", "value"),
            ("result.details.sessions[*].**", "missing"),
            ("result.details.sessions[*].**", "extra"),
            ("result.details.sessions[*].**", "type"),
            ("result.details.bytes", "value"),
            ("result.details.truncated", "value"),
            ("result.details.contentTruncated", "value"),
        )
    ),
    Documented("sessions_send_child_by_label", "result.details.delivery.status", "value", "completions"),
    # The child's task message, in the original document's words and marked as its spawner's.
    Documented("sessions_history_child*", "result.details.messages[0].content", "value", "child-task"),
    Documented("sessions_history_child*", "result.details.messages[0].provenance", "extra", "child-task"),
    # With each side's defaults: a session other than an agent's main one sees its own tree (clawbus's
    # `tree`), not every session (the release's `all`); the rows it may not see are left out of its page.
    *(
        Documented("sessions_list_as_peer", path, kind, "visibility", "defaults")
        for path, kind in (
            ("result.details.sessions", "length"),
            ("result.details.count", "value"),
            ("result.details.hasMore", "value"),
            ("result.details.nextOffset", "missing"),
            ("result.details.sessions[*].**", "value"),
            ("result.details.sessions[*].**", "missing"),
            ("result.details.sessions[*].**", "extra"),
            ("result.details.sessions[*].**", "type"),
        )
    ),
    # Which messages a page from an offset holds: clawbus counts the ones it shows.
    *(
        Documented("sessions_history_peer_offset", path, kind, "history-paging")
        for path, kind in (
            ("result.details.messages", "length"),
            ("result.details.messages[*].**", "value"),
            ("result.details.messages[*].**", "missing"),
            ("result.details.messages[*].**", "extra"),
            ("result.details.messages[*].**", "type"),
        )
    ),
)


def reasons(
    call: str,
    difference: Difference,
    registry: tuple[Documented, ...] = DOCUMENTED,
    configuration: str = "opened",
) -> list[str]:
    """The reasons that document ``difference`` of ``call`` in ``configuration``; none: it is not
    documented."""
    return [entry.reason for entry in registry if entry.covers(call, difference, configuration)]
