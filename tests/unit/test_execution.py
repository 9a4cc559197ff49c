"""shared/runner/execution.py: one attempt of a run, idempotent under redelivery and retries."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis
from redis.client import Pipeline

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import ClaimOutcome
from clawbus.shared.domain.sessions import SessionPatch
from clawbus.shared.ports.runtime import StepRequest, StepResult
from clawbus.shared.runner.agent_loop import LoopState
from clawbus.shared.runner.execution import Attempt, execute
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Message, RunStatus
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher, World
from tests.conftest import BrokenModel, WorldFactory
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, text, tool
from tests.support.sessions import open_sessions

TARGET = "agent:main:webchat:direct:ann"


@pytest.fixture(autouse=True)
def _target_open(store: Store, config: Config) -> None:
    """The session the runs go to is open (a send opens none: chat, spawns and PUT /v1/sessions/{key} do)."""
    open_sessions(store, config, TARGET)


def send(ctx: ToolContext, message: str, target: str = TARGET) -> str:
    result = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": target, "message": message, "timeoutSeconds": 0}
    )
    assert isinstance(result, SendResult)
    return result.run_id


def test_runs_of_one_session_execute_one_at_a_time_in_acceptance_order(
    ctx: ToolContext, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    run_ids = [send(ctx, f"m{i}") for i in range(4)]
    assert [h.run_id for h in dispatcher.heads] == run_ids[:1]  # only the head is enqueued
    inline.drain_runs()
    texts = [m.text for m in store.transcripts.last(TARGET, 20)]
    assert texts == [t for i in range(4) for t in (f"m{i}", f"echo: m{i}")]


def test_a_duplicate_delivery_of_a_finished_run_does_nothing(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    run_id = send(ctx, "once")
    inline.drain_runs()
    again = execute(inline, Attempt(run_id, TARGET, owner="late", attempt=0))
    assert again.outcome is ClaimOutcome.DONE
    assert store.transcripts.length(TARGET) == 2


def test_a_retried_attempt_commits_the_memoized_reply_without_asking_the_model(
    ctx: ToolContext, store: Store, monkeypatch: pytest.MonkeyPatch, inline: World
) -> None:
    run_id = send(ctx, "expensive")
    claim = store.runs.claim(run_id, TARGET, owner="t1", attempt=0, lease_ms=30_000, max_attempts=3)
    assert claim.state is not None
    # The first attempt's memo landed, its commit did not.
    remembered = Message.of("assistant", "remembered", timestamp=1, run_id=run_id)
    memo = LoopState(messages=[remembered], final="remembered", steps=1)
    assert store.runs.memoize(claim.state.run, claim.token, memo.model_dump_json())

    def no_model(*_: object) -> None:
        raise AssertionError("the model was asked twice")

    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", no_model)
    result = execute(inline, Attempt(run_id, TARGET, owner="t1", attempt=1))  # the retry after loss
    assert result.status is RunStatus.OK
    run = store.runs.get(run_id)
    assert run is not None
    assert run.reply == "remembered"
    assert [m.text for m in store.transcripts.last(TARGET, 5)] == ["expensive", "remembered"]


def test_a_failing_runtime_ends_the_run_in_error_and_the_lane_moves_on(
    ctx: ToolContext, store: Store, monkeypatch: pytest.MonkeyPatch, inline: World
) -> None:
    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_: BrokenModel())
    failed, after = send(ctx, "one"), send(ctx, "two")
    results = inline.drain_runs()
    assert [r.status for r in results] == [RunStatus.ERROR, RunStatus.ERROR]
    run = store.runs.get(failed)
    assert run is not None
    assert run.error == "RuntimeError: model down"
    assert store.runs.get(after) is not None
    assert store.runs.lane(TARGET) == []


def test_a_run_whose_worker_keeps_dying_ends_in_error(
    ctx: ToolContext, store: Store, config: Config, inline: World
) -> None:
    run_id = send(ctx, "poison")
    for attempt in range(config.runs.max_attempts):
        store.runs.claim(run_id, TARGET, owner="t", attempt=attempt, lease_ms=1, max_attempts=3)
    result = execute(inline, Attempt(run_id, TARGET, owner="t", attempt=config.runs.max_attempts))
    assert result.status is RunStatus.ERROR
    run = store.runs.get(run_id)
    assert run is not None
    assert "worker was lost" in (run.error or "")


def test_a_busy_lane_is_left_to_the_lease_holder(
    ctx: ToolContext, store: Store, clock: FixedClock, inline: World
) -> None:
    run_id = send(ctx, "held")
    store.runs.claim(run_id, TARGET, owner="holder", attempt=0, lease_ms=30_000, max_attempts=3)
    result = execute(inline, Attempt(run_id, TARGET, owner="someone-else", attempt=0))
    assert result.outcome is ClaimOutcome.BUSY
    assert store.transcripts.length(TARGET) == 1


def test_usage_lands_on_the_run_and_the_session(ctx: ToolContext, store: Store, inline: World) -> None:
    run_id = send(ctx, "count me")
    inline.drain_runs()
    run = store.runs.get(run_id)
    entry = store.sessions.get(TARGET)
    assert run is not None
    assert entry is not None
    assert run.usage.output_tokens > 0
    assert entry.total_tokens == run.usage.input_tokens + run.usage.output_tokens
    assert json.loads(json.dumps(run.wire()))["usage"]["outputTokens"] == run.usage.output_tokens


def test_a_runtime_sees_as_much_history_as_it_asks_for(
    ctx: ToolContext, monkeypatch: pytest.MonkeyPatch, inline: World
) -> None:
    seen: list[list[str]] = []

    class Reader:
        def __init__(self, window: int) -> None:
            self.history_window = window
            self.repeatable = False

        def step(self, request: StepRequest) -> StepResult:
            seen.append([m.text for m in request.messages])
            return StepResult(reply="r")

    for window in (1, 3):
        monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_, w=window: Reader(w))
        send(ctx, f"w{window}")
        inline.drain_runs()
    assert seen == [["w1"], ["w1", "r", "w3"]]


def test_a_session_whose_model_is_no_longer_configured_ends_its_run_with_a_clear_error(
    ctx: ToolContext, store: Store, config: Config, inline: World
) -> None:
    run_id = send(ctx, "hello")
    entry = store.sessions.get(TARGET)
    assert entry is not None
    store.sessions.patch(entry, SessionPatch({"model": "gone/model"}))  # set under an older config
    inline.drain_runs()
    run = store.runs.get(run_id)
    assert run is not None
    assert run.status is RunStatus.ERROR
    assert run.error is not None
    assert "unknown model: gone/model (configured: echo/echo" in run.error


def test_a_runs_reply_is_the_models_prose_while_its_transcript_keeps_what_it_wrote(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    run_id = send(ctx, "<think>weigh it</think>the answer<|im_end|>")
    inline.drain_runs()
    run = store.runs.get(run_id)
    assert run is not None
    assert run.reply == "echo: the answer"
    assert store.transcripts.last(TARGET, 1)[0].text == "echo: <think>weigh it</think>the answer<|im_end|>"


def _on_the_model(world: WorldFactory, server: FakeOpenAI) -> World:
    """A world whose agent's model is the fake server's."""
    provider = {"type": "openai", "baseUrl": server.url, "models": ["m"]}
    return world(
        {
            "agents": {"list": [{"id": "main", "default": True, "model": "fake/m"}]},
            "models": {"providers": {"fake": provider}},
        }
    )


def _four_steps(body: dict[str, Any]) -> Reply:
    """Three tool rounds of ``agents_list`` after the latest user message, then the answer."""
    messages = body.get("messages", [])
    latest = max(i for i, message in enumerate(messages) if message.get("role") == "user")
    rounds = sum(message.get("role") == "tool" for message in messages[latest:])
    return tool("agents_list") if rounds < 3 else text("done")


def test_a_run_of_four_model_steps_whose_tools_only_read_makes_six_round_trips_to_redis(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim, with the transcript's tail the model reads, each step's admission (after a tool step, with
    that step's settling and the loop's memo), and the commit, with the last step's settling and streamed
    text, whose answer also says how long the transcript is: what a link between a worker and Redis costs a
    run (docs/capacity.md, figures 6 and 19)."""
    with fake_openai(default=_four_steps) as server:
        w = _on_the_model(world, server)
        open_sessions(w.store, w.config, TARGET)
        ctx = w.context("agent:main:main")
        send(ctx, "first")
        w.drain_runs()  # the scripts loaded, the client warm
        run_id = send(ctx, "go")
        head = w.dispatcher.take_head()
        assert head is not None
        assert head.run_id == run_id
        trips: list[str] = []
        caller = threading.get_ident()  # the cancel listener's own reads, in its thread, are not the run's
        command, pipeline = Redis.execute_command, Pipeline.execute

        def counted_command(self: Redis, *args: Any, **options: Any) -> Any:
            if threading.get_ident() == caller:
                trips.append(str(args[0]))
            return command(self, *args, **options)

        def counted_pipeline(self: Pipeline, raise_on_error: bool = True) -> Any:
            if threading.get_ident() == caller:
                trips.append("pipeline")
            return pipeline(self, raise_on_error)

        # Streamed text goes out on its own once FLUSH_SECONDS have passed since the last tool step (a
        # follower sees it within that): on a loaded machine the last call alone can take longer, and its
        # text would go in a trip of its own rather than with the commit.
        monkeypatch.setattr("clawbus.shared.runner.execution._TextEvents.FLUSH_SECONDS", 3600.0)
        monkeypatch.setattr(Redis, "execute_command", counted_command)
        monkeypatch.setattr(Pipeline, "execute", counted_pipeline)
        result = execute(w, Attempt(run_id, TARGET, owner="w", attempt=0))
        monkeypatch.undo()

    assert result.status is RunStatus.OK
    assert len(server.requests) == 8
    assert len(trips) == 6, " ".join(trips)


def _memos_at_second_step(
    store: Store, first: Reply, seen: list[str | None]
) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers ``first``, then text; asked the second time, it puts in ``seen`` the memo of
    every run there is."""

    def model(body: dict[str, Any]) -> Reply:
        if not any(message.get("role") == "tool" for message in body.get("messages", [])):
            return first
        run_ids = [key.rsplit(":", 1)[-1] for key in store.redis.scan_iter(store.keys.run("*"))]
        seen.extend(store.redis.hget(store.keys.run(run_id), "memo") for run_id in run_ids)
        return text("done")

    return model


@pytest.mark.parametrize(
    ("first", "memo_has_the_result"),
    [
        (tool("agents_list"), True),
        (
            tool("sessions_send", sessionKey="agent:main:webchat:direct:bob", message="hi", timeoutSeconds=0),
            False,
        ),
    ],
    ids=["a-tool-that-only-reads", "a-tool-that-sends"],
)
def test_a_tool_steps_memo_is_written_after_calls_that_only_read_and_before_any_other(
    world: WorldFactory, first: Reply, memo_has_the_result: bool
) -> None:
    """A call that only reads, made again by an attempt that died after it, doubles nothing: its step's
    memo goes with the next step's admission, its result in it. Any other call's step is memoized before
    the call runs, so a retried attempt finds the call and never makes it anew."""
    with fake_openai() as server:
        w = _on_the_model(world, server)
        open_sessions(w.store, w.config, TARGET, "agent:main:webchat:direct:bob")
        seen: list[str | None] = []
        server.default = _memos_at_second_step(w.store, first, seen)
        run_id = send(w.context("agent:main:main"), "go")
        head = w.dispatcher.take_head()
        assert head is not None
        result = execute(w, Attempt(run_id, TARGET, owner="w", attempt=0))
    assert result.status is RunStatus.OK
    memos = [json.loads(memo) for memo in seen if memo]
    assert len(memos) == 1
    roles = [message["role"] for message in memos[0]["messages"]]
    assert roles == (["assistant", "toolResult"] if memo_has_the_result else ["assistant"])


def test_a_lease_lost_before_a_deferred_memo_stops_the_attempt_and_frees_the_call_it_was_admitted(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_openai(default=_four_steps) as server:
        w = _on_the_model(world, server)
        open_sessions(w.store, w.config, TARGET)
        listing = TOOLS["agents_list"]

        def taken_over(ctx: ToolContext, params: Any) -> Any:
            w.store.redis.hset(w.store.keys.lease(TARGET), "token", "another attempt's")
            return listing.run(ctx, params)

        monkeypatch.setitem(TOOLS, "agents_list", dataclasses.replace(listing, run=taken_over))
        run_id = send(w.context("agent:main:main"), "go")
        assert w.dispatcher.take_head() is not None
        result = execute(w, Attempt(run_id, TARGET, owner="w", attempt=0))
    assert result.outcome is ClaimOutcome.BUSY  # the other attempt owns the run
    assert len(server.requests) == 1  # the second step's call was admitted, never sent
    assert w.store.traffic.snapshot(["fake/m"])[0].in_flight == 0
    assert w.store.redis.hget(w.store.keys.run(run_id), "memo") is None


def test_a_replys_streamed_text_reaches_the_runs_stream_with_its_commit_before_the_end(
    world: WorldFactory,
) -> None:
    with fake_openai(default=text("the whole reply")) as server:
        w = _on_the_model(world, server)
        open_sessions(w.store, w.config, TARGET)
        run_id = send(w.context("agent:main:main"), "go")
        assert w.dispatcher.take_head() is not None
        result = execute(w, Attempt(run_id, TARGET, owner="w", attempt=0))
    assert result.status is RunStatus.OK
    events = w.store.runs.events(run_id)
    texts = [event["text"] for event in events if event.get("type") == "text"]
    assert "".join(texts) == "the whole reply"
    last_text = max(i for i, event in enumerate(events) if event.get("type") == "text")
    assert events[-1].get("type") == "ended"
    assert last_text < len(events) - 1


@pytest.mark.parametrize(("paid", "memoized"), [(False, 0), (True, 1)], ids=["echo", "a-model-over-http"])
def test_a_final_state_is_memoized_ahead_of_the_commit_only_where_asking_again_would_cost(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch, paid: bool, memoized: int
) -> None:
    """The memo in the commit's round trip spares a retried attempt a paid model call when the commit does
    not happen; the built-in runtimes answer the same again for nothing, and their runs send a script less."""
    with fake_openai(default=text("paid for")) as server:
        w = _on_the_model(world, server) if paid else world()
        open_sessions(w.store, w.config, TARGET)
        memos: list[str] = []
        memoize_call = w.store.runs.memoize_call

        def recorded(run: Any, token: str, memo: str) -> Any:
            memos.append(memo)
            return memoize_call(run, token, memo)

        monkeypatch.setattr(w.store.runs, "memoize_call", recorded)
        run_id = send(w.context("agent:main:main"), "go")
        assert w.dispatcher.take_head() is not None
        result = execute(w, Attempt(run_id, TARGET, owner="w", attempt=0))
    assert result.status is RunStatus.OK
    assert len(memos) == memoized
