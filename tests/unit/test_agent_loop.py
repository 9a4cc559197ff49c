"""shared/runner/agent_loop.py (through shared/runner/execution.py): tool calls, tool results, waits that park
the run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import LaneHead
from clawbus.shared.runner.agent_loop import LoopState, unanswered
from clawbus.shared.runner.execution import Attempt, AttemptResult, execute
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Message, RunStatus, ToolCallBlock
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher, World
from tests.conftest import BASE_CONFIG, WorldFactory

MAIN = "agent:main:main"
RESEARCH = "agent:research:main"

RULES: list[dict[str, Any]] = [
    {"match": "list please$", "tool": {"name": "sessions_list", "args": {"limit": 5}}},
    {
        "match": "^ask research$",
        "tool": {
            "name": "sessions_send",
            "args": {"sessionKey": RESEARCH, "message": "2+2?", "timeoutSeconds": 30},
        },
    },
    {
        "match": "^bad args$",
        "tool": {"name": "sessions_send", "args": {"sessionKey": RESEARCH, "message": 5}},
    },
    {"match": "^unknown tool$", "tool": {"name": "rm_rf", "args": {}}},
    {"match": '^spin$|"allowAny"', "tool": {"name": "agents_list", "args": {}}},
    {"match": '"status": "ok"', "reply": "research answered"},
    {"match": '"status": "timeout"', "reply": "research is slow"},
    {"match": '"status": "error"', "reply": "that failed"},
    {"match": "^Agent-to-agent announce step\\.$", "reply": "ANNOUNCE_SKIP"},
]


@pytest.fixture
def config() -> Config:
    return Config.model_validate(
        {
            **BASE_CONFIG,
            "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            "agents": {
                # Direct children are leaves, without the session tools below the cap (the default is 5).
                "defaults": {"subagents": {"maxSpawnDepth": 1}},
                "list": [{"id": "main", "default": True, "model": "script/agent"}, {"id": "research"}],
            },
            "models": {"providers": {"script": {"type": "script", "models": ["agent"], "rules": RULES}}},
            "runs": {"maxSteps": 4},
        }
    )


@pytest.fixture
def operator(inline: World) -> ToolContext:
    return inline.context("agent:main:webchat:direct:op")


def tell_main(ctx: ToolContext, message: str) -> str:
    result = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": MAIN, "message": message, "timeoutSeconds": 0})
    assert isinstance(result, SendResult)
    return result.run_id


def run_next(w: World) -> AttemptResult:
    head = w.dispatcher.take_head()
    assert head is not None
    result = execute(w, Attempt(head.run_id, head.session_key, owner="w", attempt=0))
    for woken in [result.next_head, *result.wake]:
        if woken is not None:
            w.dispatcher.dispatch_run(woken)
    return result


def tool_result(store: Store, session: str = MAIN) -> dict[str, Any]:
    found = [m for m in store.transcripts.last(session, 50) if m.role == "toolResult"]
    return json.loads(found[-1].text)


def test_a_tool_call_is_answered_and_the_model_speaks_again(
    operator: ToolContext, store: Store, inline: World
) -> None:
    run_id = tell_main(operator, "list please")
    inline.drain_runs()
    run = store.runs.get(run_id)
    assert run is not None
    assert run.status is RunStatus.OK
    transcript = store.transcripts.last(MAIN, 10)
    assert [m.role for m in transcript] == ["user", "assistant", "toolResult", "assistant"]
    [call] = transcript[1].tool_calls
    assert (call.name, call.arguments) == ("sessions_list", {"limit": 5})
    assert transcript[2].tool_call_id == call.id
    assert transcript[2].tool_name == "sessions_list"
    assert transcript[2].is_error is False
    assert "sessions" in json.loads(transcript[2].text)


def test_a_waiting_send_parks_the_run_and_the_reply_resumes_it(
    operator: ToolContext, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    main_run = tell_main(operator, "ask research")
    parked = run_next(inline)
    assert parked.suspended
    run = store.runs.get(main_run)
    assert run is not None
    assert run.status is RunStatus.RUNNING  # parked, not over, and holding no worker
    assert [h.session_key for h in dispatcher.heads] == [RESEARCH]
    answered = run_next(inline)
    assert answered.status is RunStatus.OK
    assert [h.run_id for h in answered.wake] == [main_run]
    resumed = run_next(inline)
    assert resumed.status is RunStatus.OK
    run = store.runs.get(main_run)
    assert run is not None
    assert run.reply == "research answered"
    seen = tool_result(store)
    assert seen["status"] == "ok"
    assert seen["reply"] == "echo: 2+2?"
    assert seen["sessionKey"] == RESEARCH
    assert seen["flowId"] == seen["runId"]


def test_a_wait_past_its_deadline_resumes_with_the_timeout_result(
    operator: ToolContext, store: Store, dispatcher: InlineDispatcher, clock: FixedClock, inline: World
) -> None:
    main_run = tell_main(operator, "ask research")
    assert run_next(inline).suspended
    research_head = dispatcher.take_head()
    assert research_head is not None  # research never runs
    clock.advance(31)
    [stalled] = store.runs.reap()  # the parked run's lane is due at the wait's deadline
    assert stalled.run_id == main_run
    dispatcher.dispatch_run(stalled)
    assert run_next(inline).status is RunStatus.OK
    seen = tool_result(store)
    # The release's answer to a wait that ran out: the run is under way.
    assert (seen["status"], seen["targetDisposition"]) == ("accepted", "queued")
    assert seen["runId"] == research_head.run_id


def test_a_wait_on_a_run_that_vanished_resumes_at_once_with_an_error(
    operator: ToolContext, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    main_run = tell_main(operator, "ask research")
    assert run_next(inline).suspended
    research_head = dispatcher.take_head()
    assert research_head is not None
    store.redis.delete(store.keys.run(research_head.run_id))  # its session was deleted meanwhile
    dispatcher.dispatch_run(LaneHead(main_run, MAIN, "send", main_run))  # the reaper, or any redelivery
    assert run_next(inline).status is RunStatus.OK  # not parked again, not spinning
    seen = tool_result(store)
    assert seen["status"] == "error"
    assert (
        seen["error"]
        == f"run {research_head.run_id} no longer exists (its session was deleted or the run expired)"
    )


def test_a_call_repeated_after_a_lost_worker_finds_its_ended_run_and_goes_on(
    operator: ToolContext, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    main_run = tell_main(operator, "ask research")
    assert run_next(inline).suspended
    research_run = dispatcher.heads[0].run_id
    assert run_next(inline).status is RunStatus.OK
    dispatcher.drop_heads()
    # As if the worker had died after the send but before the run parked: the memo knows of the call, not
    # of the wait, so the next attempt makes the call again.
    memo = json.loads(store.redis.hget(store.keys.run(main_run), "memo"))
    memo["pending"] = None
    store.redis.hset(store.keys.run(main_run), "memo", json.dumps(memo))
    store.redis.hset(store.keys.lease(MAIN), "owner", "lost-worker")
    store.redis.hset(store.keys.lease(MAIN), "expiresAt", 0)
    result = execute(inline, Attempt(main_run, MAIN, owner="w2", attempt=0))
    assert result.status is RunStatus.OK  # the ended run answered at once: nothing parked
    assert tool_result(store)["runId"] == research_run
    assert store.runs.lane(RESEARCH) == []  # and no second send was queued


def test_bad_arguments_come_back_to_the_model_naming_the_field(
    operator: ToolContext, store: Store, inline: World
) -> None:
    tell_main(operator, "bad args")
    inline.drain_runs()
    seen = tool_result(store)
    assert seen["status"] == "error"
    assert seen["error"] == "message required"
    assert store.transcripts.last(MAIN, 1)[0].text == "that failed"


def test_an_unknown_tool_is_an_error_result_not_a_failed_run(
    operator: ToolContext, store: Store, inline: World
) -> None:
    run_id = tell_main(operator, "unknown tool")
    inline.drain_runs()
    assert tool_result(store)["error"].startswith("Unknown tool: rm_rf (available: agents_list, ")
    run = store.runs.get(run_id)
    assert run is not None
    assert run.status is RunStatus.OK


def test_a_model_that_keeps_calling_tools_is_stopped_at_max_steps(
    operator: ToolContext, store: Store, inline: World
) -> None:
    run_id = tell_main(operator, "spin")
    inline.drain_runs()
    run = store.runs.get(run_id)
    assert run is not None
    assert run.status is RunStatus.ERROR
    assert run.error == "the agent was still calling tools after 4 model steps (runs.maxSteps)"
    # What it did is still on record.
    assert [m.role for m in store.transcripts.last(MAIN, 20)].count("toolResult") == 4


def test_a_repeated_tool_call_finds_the_run_the_first_one_made(
    config: Config, store: Store, dispatcher: InlineDispatcher
) -> None:
    ctx = ToolContext(config, store, dispatcher, MAIN, origin_run_id="r1", owner=False, id_seed="r1:call_1")
    args = {"sessionKey": RESEARCH, "message": "once", "timeoutSeconds": 0}
    first = TOOLS["sessions_send"].invoke(ctx, args)
    again = TOOLS["sessions_send"].invoke(ctx, args)
    assert isinstance(first, SendResult)
    assert isinstance(again, SendResult)
    assert first.run_id == again.run_id
    assert store.runs.lane(RESEARCH) == [first.run_id]


def test_a_sub_agent_calling_a_session_tool_is_refused_in_its_result(store: Store, inline: World) -> None:
    spawned = TOOLS["sessions_spawn"].invoke(inline.context(MAIN), {"task": "list please"})
    child = spawned.wire()["childSessionKey"]
    inline.drain_runs()
    seen = tool_result(store, child)
    assert seen == {
        "status": "forbidden",
        "error": "sessions_list is not available in sub-agent sessions (tools.subagents.tools)",
    }


def test_tool_turns_show_in_history_only_with_include_tools(operator: ToolContext, inline: World) -> None:
    tell_main(operator, "list please")
    inline.drain_runs()
    history = TOOLS["sessions_history"]
    plain = history.invoke(operator, {"sessionKey": MAIN}).wire()["messages"]
    full = history.invoke(operator, {"sessionKey": MAIN, "includeTools": True}).wire()["messages"]
    # The operator's message was forwarded from its session: the release shows it as the assistant's.
    assert [m["role"] for m in plain] == ["assistant", "assistant", "assistant"]
    assert [m["role"] for m in full] == ["assistant", "assistant", "toolResult", "assistant"]
    call = full[1]["content"][0]
    assert call == {"type": "toolCall", "id": call["id"], "name": "sessions_list", "arguments": {"limit": 5}}
    assert full[1]["stopReason"] == "toolUse"
    assert full[2]["toolCallId"] == call["id"]
    assert full[2]["toolName"] == "sessions_list"
    assert full[2]["__openclaw"]["runId"] == full[1]["__openclaw"]["runId"]


def test_a_sub_agent_allowed_sessions_send_is_still_refused_and_never_parks_on_a_send(
    world: WorldFactory,
) -> None:
    """sessions_send is on the release's hard-deny list: tools.subagents.tools.allow cannot hand it to a
    sub-agent, so its call is refused in its result and its run ends without waiting on another session."""
    w = world(
        {
            "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            "tools": {"subagents": {"tools": {"allow": ["sessions_send"]}}},
            "agents": {
                "list": [{"id": "main", "default": True, "model": "script/agent"}, {"id": "research"}]
            },
            "models": {
                "providers": {
                    "script": {
                        "type": "script",
                        "models": ["agent"],
                        "rules": [
                            {**RULES[1], "match": "ask research$"},
                            {"match": '"status": "forbidden"', "reply": "not mine to send"},
                            *RULES[5:],
                        ],
                    }
                }
            },
        }
    )
    requester = w.context(MAIN)
    spawned = TOOLS["sessions_spawn"].invoke(requester, {"task": "ask research"}).wire()
    done = w.drain()
    assert "run:send" not in done
    assert tool_result(w.store, spawned["childSessionKey"]) == {
        "status": "forbidden",
        "error": "sessions_send is not available in sub-agent sessions (tools.subagents.tools)",
    }
    assert w.store.runs.lane(RESEARCH) == []
    flow = w.store.flows.get(spawned["runId"])
    assert flow is not None
    assert flow.status == "done"
    child_run = w.store.runs.get(spawned["runId"])
    assert child_run is not None
    assert child_run.reply == "not mine to send"


def test_an_aborted_loop_answers_its_open_calls_and_keeps_the_cut_text_marked() -> None:
    from clawbus.shared.runner.agent_loop import LoopState, aborted
    from clawbus.shared.wire.models import TextBlock, ToolCallBlock

    asked = Message.of("assistant", "", timestamp=1, run_id="r").model_copy(
        update={
            "content": [
                TextBlock(text="let me look"),
                ToolCallBlock(id="c1", name="sessions_list", arguments={}),
                ToolCallBlock(id="c2", name="sessions_history", arguments={"sessionKey": "main"}),
            ]
        }
    )
    answered = Message.of("toolResult", "{}", timestamp=2, run_id="r").model_copy(
        update={"tool_call_id": "c1", "tool_name": "sessions_list"}
    )
    messages = aborted(LoopState(messages=[asked, answered]), "r", 3, "I was say")
    assert messages[:2] == [asked, answered]
    refused = messages[2]
    assert (refused.role, refused.tool_call_id, refused.is_error) == ("toolResult", "c2", True)
    assert json.loads(refused.text) == {"status": "error", "error": "run aborted"}
    assert (messages[3].role, messages[3].text, messages[3].stop_reason) == (
        "assistant",
        "I was say",
        "aborted",
    )


def test_a_provider_that_numbers_its_calls_afresh_each_turn_gets_every_call_answered() -> None:
    def turn(call_id: str) -> list[Message]:
        call = ToolCallBlock(id=call_id, name="sessions_list", arguments={})
        asked = Message.of("assistant", "", timestamp=1).model_copy(update={"content": [call]})
        return [asked]

    answered = Message.of("toolResult", "{}", timestamp=2).model_copy(update={"tool_call_id": "call_0"})
    state = LoopState(messages=[*turn("call_0"), answered, *turn("call_0")])
    assert [call.id for call in unanswered(state)] == ["call_0"]
    assert unanswered(state.model_copy(update={"messages": [*state.messages, answered]})) == []
