"""A run as it moves through its session's lane: what is accepted, dispatched, claimed and committed.

The vocabulary the domain and the store speak (``shared.store.runs`` implements each step as one Lua
script): a ``NewRun`` to accept, the ``LaneHead`` to dispatch, a ``Claim`` with the ``ExecutionState`` the
attempt needs, the ``Outcome`` to commit and what the commit ``Committed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from clawbus.shared.base import trace_context
from clawbus.shared.domain import chains
from clawbus.shared.domain.chains import Chain
from clawbus.shared.wire.models import (
    Message,
    Provenance,
    Run,
    RunKind,
    RunSpec,
    RunStatus,
    SessionEntry,
    StalledRun,
    Usage,
)


class NewRun(RunSpec):
    """A run to accept: its spec and the message it starts from. Built with ``new_run``."""

    input: Message


def new_run(
    session: SessionEntry,
    kind: RunKind,
    text: str,
    *,
    run_id: str,
    now: int,
    provenance: Provenance | None = None,
    **spec: Any,
) -> NewRun:
    """The one way to build a run: ``text`` as the user message it starts from in ``session`` (stamped
    with the run and, for a message from another session, its ``provenance``); ``spec`` sets the rest of
    its ``RunSpec`` (its flow, turn, context, chain...)."""
    message = Message.of("user", text, timestamp=now, run_id=run_id, provenance=provenance)
    spec.setdefault("trace_parent", trace_context.current())
    return NewRun(
        run_id=run_id, session_key=session.key, agent_id=session.agent_id, kind=kind, input=message, **spec
    )


def inter_session_run(
    session: SessionEntry,
    kind: RunKind,
    text: str,
    *,
    run_id: str,
    now: int,
    source_key: str,
    source_tool: str,
    source_run_id: str | None = None,
    source_channel: str | None = None,
    context: str,
    flow_id: str,
    chain: Chain,
    **spec: Any,
) -> NewRun:
    """A run on another session's message (a send, a spawn, a send's reply-back turn or announce): its
    message's provenance names the session, channel, tool and run it came from, that run is its parent, and
    it belongs to the flow and the send chain (``spec``: the rest, as for ``new_run``)."""
    provenance = Provenance(
        kind="inter_session",
        source_session_key=source_key,
        source_channel=source_channel,
        source_tool=source_tool,
        source_run_id=source_run_id,
    )
    return new_run(
        session,
        kind,
        text,
        run_id=run_id,
        now=now,
        provenance=provenance,
        context=context,
        flow_id=flow_id,
        parent_run_id=source_run_id,
        **chains.fields(chain),
        **spec,
    )


@dataclass(frozen=True, slots=True)
class Enqueue:
    """A lane head's task message rendered ahead, for the accept script to push when the run is the head:
    the broker list it goes to, the message as the broker stores it, and the channel and body of its
    task-sent event (empty: none)."""

    queue: str
    message: str
    event_channel: str = ""
    event: str = ""


@dataclass(frozen=True, slots=True)
class Accepted:
    run_id: str
    session_key: str
    seq: int
    is_head: bool
    # The accept pushed the head's task message itself (``Enqueue``): nothing left to dispatch.
    enqueued: bool = False
    # Nothing was queued: the session was busy with this run (``reject``), or the message joined this
    # collect run (``collect``).
    busy_with: str | None = None
    folded_into: str | None = None
    # Nothing was queued: a ``steer`` found no running run that takes steers (``WhenBusy.steer``).
    not_steered: bool = False
    # Nothing was queued: the run's chain made its ``chains.Window`` of sends and spawns already.
    chain_full: bool = False


# Runs a steer may reach: people's conversations and sub-agents' work. Agent-to-agent runs (a send and its
# turns, announces) are never steered into: a steer waits behind them and runs on its own.
STEERABLE: frozenset[RunKind] = frozenset({"chat", "steer", "collect", "subagent", "report"})


@dataclass(frozen=True, slots=True)
class WhenBusy:
    """What the accept does with the session's lane (``messages.queue``; a send's ``mode``)."""

    action: Literal["reject", "collect", "steer"]
    # collect: how long a new collect run stays open for the messages after it.
    window_ms: int = 0
    # steer: the kinds of running run that may take it in; a lane whose head is not one of them, running,
    # refuses it (the decision is the accept script's, so no run can end between a look and the accept).
    takes_steers: frozenset[RunKind] = frozenset()

    @classmethod
    def steer(cls) -> WhenBusy:
        """Only into a running run that takes steers (a sessions_send ``mode: "steer"``)."""
        return cls("steer", takes_steers=STEERABLE)


class ClaimOutcome(StrEnum):
    CLAIMED = "claimed"
    BUSY = "busy"  # another attempt holds a live lease; the reaper dispatches again when it lapses
    DONE = "done"  # already terminal: a duplicate delivery
    MISSING = "missing"
    NOT_HEAD = "not_head"  # an earlier run of the session has not finished
    EXHAUSTED = "exhausted"  # claimed more than runs.maxAttempts times: end it as an error
    GATED = "gated"  # a sub-agent run with no place at the gate (maxConcurrent): dispatched again later
    EARLY = "early"  # a collect run whose window is still open: dispatched again when it closes


@dataclass(frozen=True, slots=True)
class Claim:
    outcome: ClaimOutcome
    token: str = ""
    attempts: int = 0
    # EARLY: how long until the run may start.
    retry_in_ms: int = 0
    # Set when the attempt may proceed (claimed or exhausted): what it needs, loaded by the claim itself.
    state: ExecutionState | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    status: RunStatus
    reply: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass(frozen=True, slots=True)
class LaneHead:
    """A run that just became its lane's head (or whose lane stalled) and must be enqueued."""

    run_id: str
    session_key: str
    kind: RunKind
    flow_id: str | None = None


@dataclass(frozen=True, slots=True)
class Ending:
    """What a run's commit writes: how it ended; what it said, appended to the transcript (tool calls and
    results included); its final loop state, memoized first in the same round trip (a commit that does not
    happen is committed from it by a retried attempt, without asking the model again); its latest prompt
    size (the session's ``contextTokens``); and events still due on its stream (text streamed since the last
    was sent), appended ahead of the run's end."""

    outcome: Outcome
    messages: list[Message] = field(default_factory=list)
    memo: str | None = None
    context_tokens: int | None = None
    events: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Memo:
    """A run's loop state (JSON) to memoize under its attempt's lease (``token``)."""

    run: Run
    token: str
    state: str


@dataclass(frozen=True, slots=True)
class Committed:
    committed: bool
    next_head: LaneHead | None = None
    # Runs suspended on a wait for this one: to be enqueued, so they resume.
    waiters: list[LaneHead] = field(default_factory=list)
    # The session transcript's length in Redis after the commit (its hot part, for the hot window).
    hot_length: int = 0


class CancelOutcome(StrEnum):
    ABORTED = "aborted"  # it was queued or parked: it ended here
    CANCELLING = "cancelling"  # a worker runs it: it ends as soon as that worker hears of it
    ENDED = "ended"  # it had already ended (``status`` says how)
    MISSING = "missing"


@dataclass(frozen=True, slots=True)
class Cancelled:
    outcome: CancelOutcome
    status: RunStatus | None = None
    # When it ended here: its lane's next run and the runs that waited for it, to be enqueued.
    next_head: LaneHead | None = None
    waiters: list[LaneHead] = field(default_factory=list)
    # The flow the run was a step of: it moves on now.
    flow_id: str | None = None


class SuspendOutcome(StrEnum):
    SUSPENDED = "suspended"
    READY = "ready"  # the awaited run has already ended: go on at once
    FENCED = "fenced"  # the lease was lost
    CANCELLED = "cancelled"  # the run was cancelled: it ends aborted instead of waiting


@dataclass(frozen=True, slots=True)
class Stalls:
    """What the stall watchdog's look found: how many runs are stalled now, and those newly stalled."""

    now: int
    fresh: list[StalledRun]


@dataclass(frozen=True, slots=True)
class ExecutionState:
    run: Run
    input: Message | None
    memo: str | None
    session: SessionEntry | None
    # The transcript's last ``tail_size`` messages (oldest first, the run's input last), read by the claim
    # itself; None when not asked for, or when they run into the transcript's cold part (read them whole).
    tail: list[Message] | None = None
    tail_size: int = 0
