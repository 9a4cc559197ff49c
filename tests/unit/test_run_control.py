"""shared/flows/run_control.py (with the cancel script and the worker's cancel listener): cancelling a run
wherever it is, a flow, a session's work."""

from __future__ import annotations

import threading

import pytest

from clawbus.shared.config import Config
from clawbus.shared.domain.runs import CancelOutcome, ClaimOutcome
from clawbus.shared.flows import run_control
from clawbus.shared.ports.runtime import RunCancelled, StepRequest, StepResult
from clawbus.shared.runner.execution import Attempt, execute
from clawbus.shared.store import Store
from clawbus.shared.store.scripts import Scripts
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import RunStatus
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher, World
from tests.support.replies import reply_lost
from tests.support.sessions import open_sessions

TARGET = "agent:research:cron:job"


@pytest.fixture(autouse=True)
def _target_open(store: Store, config: Config) -> None:
    """The session the runs go to is open (a send opens none: chat, spawns and PUT /v1/sessions/{key} do)."""
    open_sessions(store, config, TARGET)


def send(ctx: ToolContext, message: str, target: str = TARGET) -> SendResult:
    result = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": target, "message": message, "timeoutSeconds": 0}
    )
    assert isinstance(result, SendResult)
    return result


def test_a_queued_head_ends_aborted_and_its_lane_moves_on(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    first, second = send(ctx, "one").run_id, send(ctx, "two").run_id
    cancelled = run_control.cancel_run(inline, first)
    assert (cancelled.outcome, cancelled.status) == (CancelOutcome.ABORTED, RunStatus.ABORTED)
    assert cancelled.next_head is not None
    assert cancelled.next_head.run_id == second
    run = store.runs.get(first)
    assert run is not None
    assert (run.status, run.error, run.started_at) == (RunStatus.ABORTED, "run aborted", None)
    assert store.runs.lane(TARGET) == [second]
    assert [e["type"] for e in store.runs.events(first)] == ["queued", "ended"]
    # Its own message, still queued, does nothing when it arrives; the next one runs.
    results = inline.drain_runs()
    assert results[0].outcome is ClaimOutcome.DONE
    assert store.runs.get(second).status is RunStatus.OK  # type: ignore[union-attr]
    assert [m.text for m in store.transcripts.last(TARGET, 10)] == ["two", "echo: two"]


def test_a_run_behind_the_head_is_taken_out_without_touching_the_head(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    first, second, third = (send(ctx, m).run_id for m in ("one", "two", "three"))
    cancelled = run_control.cancel_run(inline, second)
    assert cancelled.outcome is CancelOutcome.ABORTED
    assert cancelled.next_head is None
    assert store.runs.lane(TARGET) == [first, third]
    entry = store.sessions.get(TARGET)
    assert entry is not None
    assert entry.aborted_last_run is True
    inline.drain_runs()
    assert [store.runs.get(r).status for r in (first, second, third)] == ["ok", "aborted", "ok"]  # type: ignore[union-attr]
    entry = store.sessions.get(TARGET)
    assert entry is not None
    assert entry.aborted_last_run is False  # a later run ended ok


def test_an_ended_run_is_reported_with_its_status_and_a_missing_one_as_missing(
    ctx: ToolContext, inline: World
) -> None:
    run_id = send(ctx, "done").run_id
    inline.drain_runs()
    ended = run_control.cancel_run(inline, run_id)
    assert (ended.outcome, ended.status) == (CancelOutcome.ENDED, RunStatus.OK)
    assert run_control.cancel_run(inline, "nope").outcome is CancelOutcome.MISSING


def test_a_running_run_is_marked_and_announced_for_its_worker(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    run_id = send(ctx, "long").run_id
    claim = store.runs.claim(run_id, TARGET, owner="w", attempt=0, lease_ms=30_000, max_attempts=3)
    assert claim.state is not None
    heard: list[str | None] = []
    subscribed = threading.Event()
    listener = threading.Thread(
        target=lambda: heard.extend(_first_id(store.runs.cancellations(subscribed.set))), daemon=True
    )
    listener.start()
    assert subscribed.wait(5)
    cancelled = run_control.cancel_run(inline, run_id)
    assert cancelled.outcome is CancelOutcome.CANCELLING
    listener.join(5)
    assert heard == [run_id]
    assert store.runs.cancel_requested(run_id)
    assert store.runs.get(run_id).status is RunStatus.RUNNING  # type: ignore[union-attr]
    assert store.runs.events(run_id)[-1]["type"] == "cancel_requested"


def _first_id(ids: object) -> list[str | None]:
    for run_id in ids:  # type: ignore[attr-defined]
        if run_id is not None:
            return [run_id]
    return []


def test_a_worker_stops_a_run_cancelled_mid_answer_and_commits_what_it_had(
    ctx: ToolContext, store: Store, monkeypatch: pytest.MonkeyPatch, inline: World
) -> None:
    """The cancel comes over the listener while the model is talking: the step ends with the text so far,
    and the run commits it marked aborted."""

    class Talking:
        history_window = 1
        repeatable = False

        def step(self, request: StepRequest) -> StepResult:
            assert run_control.cancel_run(inline, run_id).outcome is CancelOutcome.CANCELLING
            assert request.cancel is not None
            assert request.cancel.wait(5), "the listener never heard the cancel"
            raise RunCancelled("half an ans")

    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_: Talking())
    run_id = send(ctx, "talk").run_id
    result = execute(inline, Attempt(run_id, TARGET, owner="w", attempt=0))
    assert result.status is RunStatus.ABORTED
    run = store.runs.get(run_id)
    assert run is not None
    assert (run.status, run.reply, run.error) == (RunStatus.ABORTED, "half an ans", "run aborted")
    last = store.transcripts.last(TARGET, 1)[0]
    assert (last.role, last.text, last.stop_reason) == ("assistant", "half an ans", "aborted")


def test_a_run_cancelled_before_its_attempt_starts_asks_no_model(
    ctx: ToolContext, store: Store, monkeypatch: pytest.MonkeyPatch, inline: World
) -> None:
    """Cancelled while running, its worker lost: the next attempt reads the mark and stops at once."""

    class Unreachable:
        history_window = 1
        repeatable = False

        def step(self, _request: StepRequest) -> StepResult:
            raise AssertionError("the model was asked")

    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_: Unreachable())
    run_id = send(ctx, "talk").run_id
    store.runs.claim(run_id, TARGET, owner="lost", attempt=0, lease_ms=1, max_attempts=3)
    run_control.cancel_run(inline, run_id)
    store.clock.advance(10)  # type: ignore[attr-defined]
    result = execute(inline, Attempt(run_id, TARGET, owner="next", attempt=0))
    assert result.status is RunStatus.ABORTED


def test_stop_drops_the_queued_runs_from_the_back_and_marks_the_running_one(
    ctx: ToolContext, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    runs = [send(ctx, m).run_id for m in ("one", "two", "three")]
    store.runs.claim(runs[0], TARGET, owner="w", attempt=0, lease_ms=30_000, max_attempts=3)
    dispatched = len(dispatcher.heads)
    assert run_control.stop_session(inline, TARGET) == runs
    assert len(dispatcher.heads) == dispatched  # nothing behind the running run was made its successor
    assert [store.runs.get(r).status for r in runs] == ["running", "aborted", "aborted"]  # type: ignore[union-attr]
    assert store.runs.cancel_requested(runs[0])
    assert run_control.stop_session(inline, "agent:main:cron:idle") == []


def test_a_cancelled_flow_ends_canceled_and_starts_no_further_step(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    sent = send(ctx, "talk")
    assert sent.flow_id is not None
    flow = run_control.cancel_flow(inline, sent.flow_id)
    assert flow == run_control.FlowCancelled(ended_here=True, aborted=[sent.run_id])
    done = inline.drain()
    assert "reply_turn:1" not in done
    assert "announce" not in done
    ended = store.flows.get(sent.flow_id)
    assert ended is not None
    assert (ended.status, ended.stop_reason, ended.error) == ("done", "canceled", "the flow was cancelled")
    again = run_control.cancel_flow(inline, sent.flow_id)
    assert again == run_control.FlowCancelled(ended_here=False, aborted=[])
    assert run_control.cancel_flow(inline, "0" * 8 + "-0000-0000-0000-" + "0" * 12) is None


def test_a_flow_cancel_whose_end_was_sent_again_after_its_reply_was_lost_still_stops_the_flows_run(
    ctx: ToolContext, store: Store, monkeypatch: pytest.MonkeyPatch, inline: World
) -> None:
    """The end's repeat answered that the flow had already ended, and the cancel, taking it for someone
    else's end, left the flow's run to go on."""
    sent = send(ctx, "talk")
    assert sent.flow_id is not None
    end_flow = Scripts(store.redis).end_flow.sha
    evalsha, lost = store.redis.evalsha, reply_lost(store.redis.evalsha)

    def only_the_ends_reply_lost(sha: str, *args: object) -> object:
        return (lost if sha == end_flow else evalsha)(sha, *args)

    monkeypatch.setattr(store.redis, "evalsha", only_the_ends_reply_lost)
    flow = run_control.cancel_flow(inline, sent.flow_id)
    monkeypatch.undo()
    assert flow == run_control.FlowCancelled(ended_here=True, aborted=[sent.run_id])
    run = store.runs.get(sent.run_id)
    assert run is not None
    assert run.status is RunStatus.ABORTED
