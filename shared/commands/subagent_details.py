"""``/subagents info <id|#>`` (one sub-agent's details) and ``/subagents log <id|#> [limit] [tools]`` (its
recent transcript as plain text), in the release's words and lines.

clawbus's task of a sub-agent is its spawn (the flow whose id is the spawn's run id), so ``Run`` and
``TaskId`` name the same id. Every text shown is on one line and redacted as ``sessions_history`` redacts.
"""

from __future__ import annotations

import re

from clawbus.shared.commands.base import Call, Outcome
from clawbus.shared.commands.durations import stamped
from clawbus.shared.domain import subagents
from clawbus.shared.domain.redaction import scrub
from clawbus.shared.runner.visible_text import visible
from clawbus.shared.tools.history_view import STEP_PROMPTS, shown
from clawbus.shared.tools.status_card import compact_duration
from clawbus.shared.tools.subagent_targets import Children, resolve, run_label
from clawbus.shared.tools.subagents_view import Child, shown_status, task_row
from clawbus.shared.wire.models import Message, TextBlock

INFO_USAGE = "ℹ️ Usage: /subagents info <id|#>"
LOG_USAGE = "📜 Usage: /subagents log <id|#> [limit]"
LOG_LIMIT, MAX_LOG_LIMIT = 20, 200
_TOOL_ROLES = ("toolResult", "tool")
# The task registry's word for a finished task (the tool's task rows say ``completed``).
_REGISTRY_WORDS = {"completed": "succeeded"}
# How an ended sub-agent's run came out (the release's outcome statuses).
_OUTCOMES = {"done": "ok", "error": "error", "timeout": "timeout", "killed": "killed"}
_COUNT = re.compile(r"[+-]?[0-9]+")
_SPACES = re.compile(r"\s+")


def info(call: Call, seen: Children, words: list[str]) -> Outcome:
    if not words:
        return call.said(INFO_USAGE)
    found = resolve(seen, words[0])
    if isinstance(found, str):
        return call.failed(found)
    return call.said("\n".join(_info_lines(found, call.ctx.store.clock.now_ms())))


def _info_lines(child: Child, now: int) -> list[str]:
    entry = child.entry
    task = task_row(child) if child.flow is not None else None
    runtime = compact_duration(child.runtime_ms(now)) if child.started_at else None
    lines: list[str | None] = [
        "ℹ️ Subagent info",
        f"Status: {shown_status(child)}",
        f"Label: {run_label(child)}",
        f"Task: {_one_line(child.task) or 'n/a'}",
        f"Run: {child.first.run_id if child.first else entry.spawn_flow_id or 'n/a'}",
        f"TaskId: {task.task_id}" if task else None,
        f"TaskStatus: {_REGISTRY_WORDS.get(task.status, task.status)}" if task else None,
        f"Session: {entry.key}",
        f"SessionId: {entry.session_id}",
        f"Runtime: {runtime or 'n/a'}",
        f"Created: {stamped(child.first.created_at if child.first else entry.created_at, now)}",
        f"Started: {stamped(child.started_at, now)}",
        f"Ended: {stamped(child.ended_at, now)}",
        f"Cleanup: {entry.cleanup or 'keep'}",
        f"Outcome: {_outcome(child)}",
        _interrupted(child),
        f"Progress: {progress}" if task and (progress := _one_line(task.progress_summary)) else None,
        f"Task error: {task.error}" if task and task.error else None,
        f"Delivery: {task.delivery_status}" if task else None,
    ]
    return [line for line in lines if line is not None]


def _outcome(child: Child) -> str:
    """``ok``, ``error (<why>)``, ...; ``n/a`` while it has not ended."""
    if not child.ended:
        return "n/a"
    error = _one_line(child.latest.error) if child.latest and child.status != "done" else ""
    return _OUTCOMES[child.status] + (f" ({error})" if error else "")


def _interrupted(child: Child) -> str | None:
    """clawbus's line: attempts of the sub-agent's runs lost with their worker, each retried."""
    runs = {run.run_id: run for run in (child.first, child.latest) if run is not None}
    lost = sum(run.interrupted for run in runs.values())
    return subagents.interrupted(lost) if lost else None


def _one_line(text: str | None) -> str:
    return _SPACES.sub(" ", scrub(text) or "").strip()


def log(call: Call, seen: Children, words: list[str]) -> Outcome:
    """The last ``limit`` messages (20, at most 200) the sub-agent's history shows, tool results only with
    ``tools``: ``User: ...`` and ``Assistant: ...`` lines."""
    if not words:
        return call.said(LOG_USAGE)
    tools = any(word.lower() == "tools" for word in words)
    count = next((int(word) for word in words[1:] if _COUNT.fullmatch(word) and int(word) >= 0), None)
    limit = LOG_LIMIT if count is None else min(MAX_LOG_LIMIT, max(1, count))
    found = resolve(seen, words[0])
    if isinstance(found, str):
        return call.failed(found)
    # As the release: the limit counts the tool results it then leaves out.
    messages = call.ctx.store.transcripts.last(found.entry.key, limit, keep=_logged)
    lines = [line for m in messages if (tools or m.role not in _TOOL_ROLES) and (line := _log_line(m))]
    header = f"📜 Subagent log: {run_label(found)}"
    return call.said("\n".join([header, *(lines or ["(no messages)"])]))


def _logged(message: Message) -> bool:
    """What its history shows, but the inputs of clawbus's own steps (its announce step's prompt), which
    the release never writes into a transcript."""
    return shown(message) and not (message.role == "user" and message.text in STEP_PROMPTS)


def _log_line(message: Message) -> str | None:
    texts = [block.text for block in message.content if isinstance(block, TextBlock)]
    # An assistant's text is cleaned of what is not prose (its parts joined as written); anyone else's is
    # plain text.
    text = visible("".join(texts)) if message.role == "assistant" else " ".join(texts)
    flat = _one_line(text)
    if not flat:
        return None
    return f"{'Assistant' if message.role == 'assistant' else 'User'}: {flat}"
