"""A session's state changes (docs/contract.md §10, "Change tracking"): which changes are recorded, and in
what words, as OpenClaw 2026.9.6's signal log records them (``dist/session-state-events-*.mjs``).

The store appends an event in the same script as the change it records (a run's accept, commit or cancel),
so a change and its event are one step: ``stateVersion`` is never behind what it counts. Each recorded
event raises the session's ``stateVersion`` by one; the events are that number's, 1, 2, 3... per session.

The release's kinds clawbus has: ``child_spawned`` (a spawn's first run accepted), ``run_completed`` and
``run_failed`` (a spawned child's task run or a send to it ended) and ``human_direct_message`` (a person's
message to a spawned session). Its other kinds (``created`` with a trusted creator, ``goal_changed``,
``compacted``, ``adopted``, ``upstream_missing``) record what clawbus does not have.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from clawbus.shared.wire.models import RunKind, RunStatus

ActorType = Literal["human", "agent", "system"]
# ``always``: recorded; ``spawned``: recorded only if the session has a spawner (the release projects only
# a sub-agent's run outcomes); ``watched``: only if it has a spawner or a watcher (the release skips a
# human message to a session nobody watches).
When = Literal["always", "spawned", "watched"]

# How many events a session's log keeps (about: trimmed a macro node at a time) and for how long after its
# last one. The release keeps 50,000 events of all sessions for 30 days; a read returns 200 at most.
LOG_MAX_EVENTS = 1000
LOG_TTL_SECONDS = 30 * 24 * 3600
READ_LIMIT = 200

# The release's summaries of a child run's ends (``SUBAGENT_TERMINAL_SUMMARY``) and the outcome its
# ``run_failed`` payload names.
_ENDED: dict[RunStatus, tuple[str, str | None]] = {
    RunStatus.OK: ("child run completed", None),
    RunStatus.ERROR: ("child run failed", "error"),
    RunStatus.TIMEOUT: ("child run timed out", "timeout"),
    RunStatus.ABORTED: ("child run cancelled", "cancelled"),
}
# The runs of a child the release projects: its task and the sends to it (the release registers a follow-up
# send to a child as a task of its own). clawbus's own announce and report steps are not the release's runs.
_CHILD_RUNS: frozenset[RunKind] = frozenset({"subagent", "send"})
# The kinds a person's chat message runs as (docs/contract.md §11: its session's queue mode decides).
_HUMAN_RUNS: frozenset[RunKind] = frozenset({"chat", "steer", "collect"})


@dataclass(frozen=True, slots=True)
class StateEvent:
    """One change to record: the release's event fields (``sequence`` and ``occurredAt`` are the store's)."""

    kind: str
    actor_type: ActorType
    summary: str
    actor_id: str | None = None
    run_id: str | None = None
    payload: dict[str, str] | None = None
    when: When = "always"
    # The release's ``NOTIFY_BY_SESSION_STATE_EVENT_KIND``: the session's watchers (its spawner among them)
    # get a stale-state notice, all but the actor who made the change.
    notify: bool = False
    # ``child_spawned``: the actor (the requester) starts watching the session at this change's version.
    seed: bool = False

    def encoded(self) -> str:
        """The event as the store's scripts take it (``record_state`` in ``_lib.lua``), bounds included."""
        fields: dict[str, object] = {
            "kind": self.kind,
            "actorType": self.actor_type,
            "summary": self.summary,
            "when": self.when,
            "keep": LOG_MAX_EVENTS,
            "ttl": LOG_TTL_SECONDS,
        }
        if self.actor_id:
            fields["actorId"] = self.actor_id
        if self.run_id:
            fields["runId"] = self.run_id
        if self.payload:
            fields["payload"] = json.dumps(self.payload, separators=(",", ":"))
        if self.notify:
            fields["notify"] = True
        if self.seed:
            fields["seed"] = True
        return json.dumps(fields, separators=(",", ":"))


def encoded(event: StateEvent | None) -> str:
    """The event as a script's argument; '' for none."""
    return event.encoded() if event else ""


def child_spawned(requester_key: str, run_id: str) -> StateEvent:
    """A spawn's child session and its task run were accepted (the release's ``recordSubagentSpawned``)."""
    return StateEvent(
        kind="child_spawned",
        actor_type="agent",
        actor_id=requester_key,
        run_id=run_id,
        summary="child session spawned",
        seed=True,
    )


def human_message(kind: RunKind, channel: str | None, run_id: str) -> StateEvent | None:
    """A person's message to a session (``recordSessionHumanDirectMessage``): recorded for a spawned or a
    watched session only, and the one change of clawbus's that notifies its watchers. A message from
    another session or from clawbus itself is not a person's."""
    if kind not in _HUMAN_RUNS:
        return None
    return StateEvent(
        kind="human_direct_message",
        actor_type="human",
        run_id=run_id,
        summary=f"human message via {(channel or '').strip() or 'unknown'}",
        when="watched",
        notify=True,
    )


def run_ended(kind: RunKind, status: RunStatus, run_id: str) -> StateEvent | None:
    """A child's run ended (``recordSubagentTerminalState``): recorded on a spawned session only."""
    if kind not in _CHILD_RUNS or status not in _ENDED:
        return None
    summary, outcome = _ENDED[status]
    return StateEvent(
        kind="run_completed" if outcome is None else "run_failed",
        actor_type="system",
        run_id=run_id,
        summary=summary,
        payload={"outcome": outcome} if outcome else None,
        when="spawned",
    )


@dataclass(frozen=True, slots=True)
class StateChanges:
    """A session's retained events after a version (at most ``READ_LIMIT``), as the release lists them:
    ``truncated`` when more follow; ``earliest``, the first event still kept (``version + 1`` when none
    is, 0 for a session with none); ``gap`` when some after the version asked for are no longer kept."""

    version: int
    events: list[dict[str, object]]
    truncated: bool
    earliest: int
    gap: bool


def changes(
    version: int, after: int, events: list[dict[str, object]], first_kept: int | None, limit: int
) -> StateChanges:
    """``events``: those the log keeps after ``after``, up to ``limit + 1``; ``first_kept``: the sequence of
    the log's first event (None: it keeps none). Versions are consecutive per session, so the first event
    kept says exactly what was trimmed: every version below it (the release keeps a pruned watermark for
    that, its sequences being shared by all sessions)."""
    earliest = first_kept if first_kept is not None else (version + 1 if version > 0 else 0)
    return StateChanges(
        version=version,
        events=events[:limit],
        truncated=len(events) > limit,
        earliest=earliest,
        gap=after + 1 < earliest,
    )


# --- watches and notices (docs/contract.md §10, "Watches and notices") ------------------------------------

# The release's stale-state notice (``sessionStateNoticeText``), as a ``System:`` line of the watcher's next
# turn; the claim script fills it in (target, target, version) with Lua's ``string.format``, which reads
# only the template's ``%s``.
NOTICE_LINE = (
    'System: Session "%s" changed (other actor). Reconcile before acting: session_status sessionKey "%s" '
    "changesSince %s."
)


def notice_line(target_key: str, since: int) -> str:
    """One pending notice as the watcher's turn reads it (what the claim script writes)."""
    return NOTICE_LINE % (target_key, target_key, since)


def may_watch(watcher_key: str, target_key: str) -> bool:
    """Whether a session may watch another (the release's ``registerSessionStateWatch``): not itself, and
    only an agent's session (``agent:<id>:<rest>``), the only kind a notice can be queued for."""
    if watcher_key == target_key:
        return False
    head, _, rest = watcher_key.partition(":")
    agent, _, tail = rest.partition(":")
    return head == "agent" and bool(agent) and bool(tail)
