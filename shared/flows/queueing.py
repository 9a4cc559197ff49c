"""Busy sessions (docs/contract.md §11): what a chat message that arrives while its session is running or has
runs queued does, by queue mode (``messages.queue``, the session's ``queueMode``, the message's own):
followup, steer, collect, interrupt, reject; and the cap on the messages a session may have queued. The
session's own options (``/queue ... debounce: cap: drop:``) go over ``messages.queue``'s.

Only people's messages are subject to it (runs of kind ``chat``, ``steer``, ``collect``): agent-to-agent
traffic (a send's turns, announces, sub-agent reports) always queues, and is never dropped or stopped here.
"""

from __future__ import annotations

from dataclasses import dataclass

from clawbus.shared.config import Config
from clawbus.shared.domain.runs import CancelOutcome, WhenBusy
from clawbus.shared.flows.run_control import cancel_run
from clawbus.shared.ports.context import Context
from clawbus.shared.wire.models import QueueDrop, QueueMode, RunKind, SessionEntry
from clawbus.shared.wire.send_schema import SendResult

# People's messages: what a queue mode and the cap act on.
PEOPLES: frozenset[RunKind] = frozenset({"chat", "steer", "collect"})
# Each dropped message's share of a ``summarize`` line.
SUMMARY_CHARS = 120


def mode_for(
    config: Config, session: SessionEntry | None, channel: str | None, asked: QueueMode | None
) -> QueueMode:
    """The message's own mode, else the session's, else its channel's (``byChannel``), else the default."""
    queue = config.messages.queue
    chosen = asked or (session.queue_mode if session else None)
    return chosen or (queue.by_channel.get(channel) if channel else None) or queue.mode


def kind_for(mode: QueueMode) -> RunKind:
    """The run a message becomes: a steer waits to be taken in by the running run, a collect gathers."""
    return "steer" if mode == "steer" else "collect" if mode == "collect" else "chat"


@dataclass(frozen=True, slots=True)
class QueueOptions:
    """Queue options asked for one message (a ``/queue`` directive with text after it), over the
    session's; None: not asked."""

    debounce_ms: int | None = None
    cap: int | None = None
    drop: QueueDrop | None = None


@dataclass(frozen=True, slots=True)
class Limits:
    """The cap, its drop policy and the collect window a session's messages are held to."""

    cap: int
    drop: QueueDrop
    debounce_ms: int
    # Where the cap comes from, as a refusal or a dropped run says it.
    cap_source: str


def limits(
    config: Config,
    session: SessionEntry | None,
    asked: QueueOptions | None = None,
    channel: str | None = None,
) -> Limits:
    """Each option on its own, as the release takes them: the message's, else the session's (``/queue
    ... debounce: cap: drop:``), else ``messages.queue``'s (the debounce of the message's channel,
    ``debounceMsByChannel``, over its own)."""
    queue = config.messages.queue
    own = asked or QueueOptions()
    cap = _first(own.cap, session.queue_cap if session else None)
    debounce_ms = _first(own.debounce_ms, session.queue_debounce_ms if session else None)
    configured = queue.debounce_ms_by_channel.get(channel or "", queue.debounce_ms)
    return Limits(
        cap=queue.cap if cap is None else cap,
        drop=own.drop or (session.queue_drop if session else None) or queue.drop,
        debounce_ms=configured if debounce_ms is None else debounce_ms,
        cap_source="messages.queue.cap=" if cap is None else "/queue cap:",
    )


def _first(asked: int | None, stored: int | None) -> int | None:
    return asked if asked is not None else stored


def when_busy(mode: QueueMode, held: Limits) -> WhenBusy | None:
    if mode == "reject":
        return WhenBusy("reject")
    if mode == "collect":
        return WhenBusy("collect", held.debounce_ms)
    return None


def busy(session_key: str, running: str) -> SendResult:
    """``reject``'s answer: which run the session is busy with, and that nothing was queued."""
    return SendResult(
        run_id=running,
        status="busy",
        session_key=session_key,
        error=f"{session_key} is busy with run {running} (queue mode reject): nothing was queued; "
        "send it again once that run has ended, or with another queueMode",
    )


def interrupt(ctx: Context, session_key: str) -> list[str]:
    """``interrupt``: the running run is stopped (its text so far kept) and the queued messages dropped, so
    the new message runs next. Agent-to-agent runs in the lane go on. Returns the runs stopped."""
    stopped = []
    for run_id in reversed(ctx.store.runs.lane(session_key)):  # the queued ones first: none becomes the head
        run = ctx.store.runs.get(run_id)
        if run is not None and run.kind in PEOPLES and not run.status.terminal:
            cancel_run(ctx, run_id, "interrupted by a newer message (queue mode interrupt)")
            stopped.append(run_id)
    return stopped[::-1]


@dataclass(frozen=True, slots=True)
class Room:
    """What the cap left of a session's queue for one more message."""

    # ``drop: new``: the message itself is refused, with this text.
    refused: str | None = None
    # ``drop: summarize``: the line that stands for the dropped messages in the new one's input.
    summary: str | None = None


def make_room(ctx: Context, session_key: str, mode: QueueMode, held: Limits, lane: list[str]) -> Room:
    """The cap (``messages.queue.cap``, or the session's): the session's queued messages (not the running
    one) may not pass it; past it ``drop`` decides. Every drop is counted
    (``clawbus_messages_dropped_total``) and said on the dropped run or in the answer. Modes that add no
    queued run of their own have nothing to make room for (``reject``, ``interrupt``, which empty the queue
    or add nothing; ``collect``, whose messages fold into one run). ``lane``: the session's lane as the
    caller read it with the session, in one round trip (``Runs.session_and_lane``)."""
    if mode not in ("followup", "steer"):
        return Room()
    store = ctx.store
    if len(lane) - 1 < held.cap:  # the queued messages are at most the lane's runs after its head
        return Room()
    queued = [
        run
        for run in (store.runs.get(run_id) for run_id in lane[1:])
        if run is not None and run.kind in PEOPLES and not run.status.terminal
    ]
    over = len(queued) - held.cap + 1
    if over <= 0:
        return Room()
    if held.drop == "new":
        store.fleet.count_dropped("new", 1)
        return Room(
            refused=f"dropped: {session_key} has {len(queued)} messages queued, the most it may "
            f"({held.cap_source}{held.cap}, drop=new)"
        )
    reason = f"dropped: a newer message came while the queue was full ({held.cap_source}{held.cap})"
    # Only what this message's cancels ended is dropped (counted, summarized): a run another client ended
    # meanwhile (a cancel, another message at the cap at the same time) was not dropped here.
    dropped = [
        run for run in queued[:over] if cancel_run(ctx, run.run_id, reason).outcome is CancelOutcome.ABORTED
    ]
    if not dropped:
        return Room()
    store.fleet.count_dropped(held.drop, len(dropped))
    if held.drop == "old":
        return Room()
    inputs = store.runs.inputs([run.run_id for run in dropped])
    texts = [_short(message.text) for message in inputs if message is not None]
    return Room(summary=f"{len(texts)} earlier messages: " + " | ".join(texts))


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SUMMARY_CHARS else flat[: SUMMARY_CHARS - 1] + "…"
