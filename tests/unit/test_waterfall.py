"""shared/domain/waterfall.py: runs, the messages they wrote and their events, as waterfall rows."""

from __future__ import annotations

from typing import Any

from clawbus.shared.domain.waterfall import RunRecords, Step, model_steps, row, rows
from clawbus.shared.wire.models import Message, Run, RunStatus

RUN = "run-1"


def run(run_id: str = RUN, **fields: Any) -> Run:
    base: dict[str, Any] = {
        "run_id": run_id,
        "session_key": "agent:main:main",
        "agent_id": "main",
        "kind": "chat",
        "status": RunStatus.OK,
        "seq": 1,
        "created_at": 1_000,
        "started_at": 1_200,
        "ended_at": 5_000,
    }
    return Run(**(base | fields))


def said(at: int, run_id: str = RUN, *, model: str | None = "gpt", **fields: Any) -> Message:
    message = Message.of("assistant", "text", timestamp=at, run_id=run_id)
    return message.model_copy(update={"model": model, **fields})


def tool_result(at: int, run_id: str = RUN) -> Message:
    return Message.of("toolResult", "{}", timestamp=at, run_id=run_id)


def test_each_model_step_starts_at_the_mark_before_it_and_ends_at_its_message() -> None:
    messages = [
        Message.of("user", "hi", timestamp=1_000, run_id=RUN),  # the input: accepted before the run started
        said(2_000),
        tool_result(2_300),
        tool_result(2_400),
        said(4_000),
    ]
    assert model_steps(run(), messages) == [
        Step(started_at=1_200, ended_at=2_000),
        Step(started_at=2_400, ended_at=4_000),
    ]


def test_a_resume_starts_the_step_after_it_and_is_listed() -> None:
    events = [
        {"type": "queued", "at": "1000"},
        {"type": "started", "at": "1200", "attempt": "1"},
        {"type": "text", "text": "he"},
        {"type": "started", "at": "3000", "attempt": "1"},
        {"type": "ended", "status": "ok", "at": "5000"},
    ]
    found = row(
        RunRecords(run(), depth=2, messages=[said(2_000), tool_result(2_100), said(4_500)], events=events)
    )
    assert found.steps == [Step(started_at=1_200, ended_at=2_000), Step(started_at=3_000, ended_at=4_500)]
    assert found.resumed_at == [3_000]
    # When it parked is not recorded: no parked time is made up from the gap.
    assert found.parked_ms is None
    assert found.wire() == {
        "runId": RUN,
        "sessionKey": "agent:main:main",
        "agentId": "main",
        "kind": "chat",
        "depth": 2,
        "status": "ok",
        "createdAt": 1_000,
        "startedAt": 1_200,
        "endedAt": 5_000,
        "steps": [{"startedAt": 1_200, "endedAt": 2_000}, {"startedAt": 3_000, "endedAt": 4_500}],
        "resumedAt": [3_000],
    }


def test_messages_of_other_runs_and_a_yields_closing_message_are_no_steps() -> None:
    messages = [
        said(1_500, run_id="other"),
        said(2_000),
        tool_result(2_100),
        said(2_100, model=None),  # sessions_yield ends the turn with the yield's message, no model call
        said(4_000, model=None, stop_reason="aborted"),  # cut short by a cancel: a step, to its cut
    ]
    assert model_steps(run(), messages) == [
        Step(started_at=1_200, ended_at=2_000),
        Step(started_at=2_100, ended_at=4_000),
    ]


def test_a_queued_run_has_no_start_no_steps_and_no_resumes() -> None:
    queued = run(status=RunStatus.QUEUED, started_at=None, ended_at=None)
    found = row(RunRecords(queued, depth=0, events=[{"type": "queued", "at": "1000"}]))
    assert (found.started_at, found.ended_at, found.steps, found.resumed_at) == (None, None, None, None)
    assert found.wire()["status"] == "queued"


def test_rows_are_oldest_first_shallower_first_and_each_run_once() -> None:
    late, early, child = (
        run("late", created_at=3_000),
        run("early", created_at=1_000),
        run("child", created_at=1_000),
    )
    records = [
        RunRecords(late, depth=0),
        RunRecords(child, depth=1),
        RunRecords(early, depth=0),
        RunRecords(late, depth=0),
    ]
    assert [(r.run_id, r.depth) for r in rows(records)] == [("early", 0), ("child", 1), ("late", 0)]


def test_the_trace_id_is_the_runs_when_it_has_one() -> None:
    assert "traceId" not in row(RunRecords(run(), depth=0)).wire()
    traced = run(trace_parent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert row(RunRecords(traced, depth=0)).wire()["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"
