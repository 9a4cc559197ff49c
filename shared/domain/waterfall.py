"""A tree's time: the runs of a flow or of a session's sub-agent tree as the rows of a waterfall (one bar per
run, by depth), drawn from clawbus's own records, so it needs no tracing backend.

Pure: the caller reads the runs, the messages they wrote and their event streams; this turns them into rows.
What the records hold, and so what a row says:

- queued is ``createdAt -> startedAt`` and running ``startedAt -> endedAt`` (the run's own timestamps);
- a model step ends at the ``timestamp`` of the assistant message it wrote (the agent loop stamps it when the
  model's answer is in) and starts at the latest earlier mark of the same run: its start, a later ``started``
  event (a resume after a park or a wait, or a new attempt), or the previous message it wrote (a tool's
  result). A run's messages reach its transcript when it commits, so a running run has no steps yet;
- ``resumedAt``: every ``started`` event after the first (the run went on after a park, a wait for another
  run, or a lost worker). When it stopped before each is not recorded, so neither is ``parkedMs``: the field
  is in the shape and left out, rather than guessed from the gaps;
- ``traceId``: the run's (from the ``traceparent`` it was accepted with), when traces are sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from clawbus.shared.wire.models import Message, Run, RunKind, RunStatus, Wire


class Step(Wire):
    """One model step of a run: from the mark before it to the assistant message it wrote."""

    started_at: int
    ended_at: int


class WaterfallRow(Wire):
    run_id: str
    session_key: str
    agent_id: str
    kind: RunKind
    # Levels below the view's root: a sub-agent tree's session depth, a flow's requester 0 and target 1.
    depth: int
    status: RunStatus
    created_at: int
    started_at: int | None = None
    ended_at: int | None = None
    # Not recorded (see the module's note): absent until runs record when they park.
    parked_ms: int | None = None
    steps: list[Step] | None = None
    resumed_at: list[int] | None = None
    flow_id: str | None = None
    trace_id: str | None = None


class Waterfall(Wire):
    """``GET /v1/flows/{id}/waterfall``, ``GET /v1/sessions/{key}/waterfall``: the rows oldest first, and the
    server's clock (a bar still running is drawn to it)."""

    rows: list[WaterfallRow]
    now: int


@dataclass(frozen=True, slots=True)
class RunRecords:
    """What was read of one run: the run, its depth in the view, the transcript messages it wrote (in
    transcript order) and its event stream's entries (oldest first)."""

    run: Run
    depth: int
    messages: Sequence[Message] = ()
    events: Sequence[Mapping[str, str]] = field(default_factory=tuple)


def rows(records: Sequence[RunRecords]) -> list[WaterfallRow]:
    """One row per run (each run once, however often it was read), oldest first, shallower first at the
    same moment."""
    seen: dict[str, RunRecords] = {}
    for record in records:
        seen.setdefault(record.run.run_id, record)
    ordered = sorted(seen.values(), key=lambda r: (r.run.created_at, r.depth, r.run.seq, r.run.run_id))
    return [row(record) for record in ordered]


def row(record: RunRecords) -> WaterfallRow:
    run = record.run
    starts = _starts(record.events)
    steps = model_steps(run, record.messages, starts)
    resumed = starts[1:] if run.started_at is not None else []
    return WaterfallRow(
        run_id=run.run_id,
        session_key=run.session_key,
        agent_id=run.agent_id,
        kind=run.kind,
        depth=record.depth,
        status=run.status,
        created_at=run.created_at,
        started_at=run.started_at,
        ended_at=run.ended_at,
        steps=steps or None,
        resumed_at=resumed or None,
        flow_id=run.flow_id,
        trace_id=run.trace_id,
    )


def model_steps(run: Run, messages: Sequence[Message], starts: Sequence[int] = ()) -> list[Step]:
    """The run's model steps, from the messages it wrote: each assistant message a model answered (it names
    its model) or one cut short by a cancel; a yield's closing message is no model step."""
    if run.started_at is None:
        return []
    marks = sorted({run.started_at, *starts})
    steps: list[Step] = []
    previous: list[int] = []
    for message in messages:
        if message.run_id != run.run_id:
            continue
        if message.role == "assistant" and (message.model is not None or message.stop_reason == "aborted"):
            end = message.timestamp
            begin = max((t for t in (*marks, *previous) if t <= end), default=run.started_at)
            steps.append(Step(started_at=min(begin, end), ended_at=end))
        previous.append(message.timestamp)
    return steps


def _starts(events: Sequence[Mapping[str, str]]) -> list[int]:
    """When each ``started`` event says the run (re)started, in order."""
    found: list[int] = []
    for event in events:
        at = event.get("at", "")
        if event.get("type") == "started" and at.isdigit():
            found.append(int(at))
    return found
