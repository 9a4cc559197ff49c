"""shared/tools/spawn.py and the spawn flow: SPEC 6's checks in order, the child, the announce, cleanup."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest

from shared import flows, keys
from shared.clock import FixedClock
from shared.config import Config
from shared.inbound import receive
from shared.models import InboundMessageParams, SpawnResult, ToolFailure
from shared.runtime.base import StepResult
from shared.store import Store
from shared.tools import TOOLS, ToolContext
from tests.conftest import RecordingDispatcher, drain_flows, make_config

CALLER = "agent:main:webchat:direct:ann"
BASE: dict[str, Any] = {
    "agents": {
        "list": [
            {"id": "main", "default": True, "subagents": {"allowAgents": ["research"]}},
            {"id": "research"},
            {"id": "ops"},
            {"id": "boxed", "sandbox": {"mode": "all"}, "subagents": {"allowAgents": ["*"]}},
        ]
    },
    "models": {"providers": {"slow": {"type": "echo", "delayMs": 300}}},
}


def world(overrides: dict[str, Any] | None = None) -> tuple[Config, Store, RecordingDispatcher]:
    config = make_config({**BASE, **(overrides or {})})
    return (
        config,
        Store(fakeredis.FakeRedis(decode_responses=True), config, FixedClock()),
        RecordingDispatcher(),
    )


def spawn(
    config: Config, store: Store, dispatcher: RecordingDispatcher, caller: str = CALLER, **args: Any
) -> SpawnResult | ToolFailure:
    ctx = ToolContext.for_caller(config, store, dispatcher, caller)
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "find out", **args})
    assert isinstance(result, SpawnResult | ToolFailure)
    return result


def refusal(result: SpawnResult | ToolFailure) -> tuple[str, str]:
    assert isinstance(result, ToolFailure)
    return result.status, result.error


def with_route(config: Config, store: Store, dispatcher: RecordingDispatcher, key: str = CALLER) -> None:
    ctx = ToolContext.for_caller(config, store, dispatcher, key)
    receive(ctx, InboundMessageParams(message="hi", channel="webchat", to="ann", timeout_seconds=0))
    drain_flows(store, config, dispatcher)


def test_spawn_returns_at_once_with_the_child_session() -> None:
    config, store, dispatcher = world()
    result = spawn(config, store, dispatcher, label="digger")
    assert isinstance(result, SpawnResult)
    assert (result.status, result.mode) == ("accepted", "run")
    assert result.child_session_key.startswith("agent:main:subagent:")
    child = store.sessions.get(result.child_session_key)
    assert child is not None
    assert (child.spawned_by, child.deliver, child.status, child.label, child.spawn_depth) == (
        CALLER,
        False,
        "running",
        "digger",
        1,
    )
    first = store.runs.get(result.run_id)
    assert first is not None
    assert first.kind == "subagent"
    assert [h.kind for h in dispatcher.heads] == ["subagent"]


@pytest.mark.parametrize("key", ["target", "channel", "to", "threadId", "replyTo"])
def test_channel_routing_keys_are_refused(key: str) -> None:
    config, store, dispatcher = world()
    assert refusal(spawn(config, store, dispatcher, **{key: "x"})) == (
        "error",
        f'sessions_spawn does not support "{key}". Use "sessions_send" for channel delivery.',
    )


def test_session_mode_needs_a_thread_and_thread_defaults_to_session_mode() -> None:
    config, store, dispatcher = world()
    assert refusal(spawn(config, store, dispatcher, mode="session")) == (
        "error",
        'mode="session" requires thread=true so the subagent can stay bound to a thread.',
    )
    result = spawn(config, store, dispatcher, thread=True, cleanup="delete")
    assert isinstance(result, SpawnResult)
    assert result.mode == "session"
    child = store.sessions.get(result.child_session_key)
    assert child is not None
    assert child.cleanup == "keep"  # always kept in session mode


def test_an_invalid_agent_id_gets_the_spec_text() -> None:
    config, store, dispatcher = world()
    assert refusal(spawn(config, store, dispatcher, agentId="Not Valid!")) == (
        "error",
        'Invalid agentId "Not Valid!". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}. '
        "Use agents_list to discover valid targets.",
    )


def test_a_sub_agent_may_not_spawn() -> None:
    config, store, dispatcher = world()
    first = spawn(config, store, dispatcher)
    assert isinstance(first, SpawnResult)
    assert refusal(spawn(config, store, dispatcher, caller=first.child_session_key)) == (
        "forbidden",
        "sessions_spawn is not allowed from sub-agent sessions",
    )


def test_the_allowlist_decides_other_agents() -> None:
    config, store, dispatcher = world()
    assert isinstance(spawn(config, store, dispatcher, agentId="research"), SpawnResult)
    assert isinstance(spawn(config, store, dispatcher, agentId="main"), SpawnResult)  # its own agent
    assert refusal(spawn(config, store, dispatcher, agentId="ops")) == (
        "forbidden",
        "agentId is not allowed for sessions_spawn (allowed: research)",
    )
    assert refusal(spawn(config, store, dispatcher, caller="agent:research:main", agentId="main")) == (
        "forbidden",
        "agentId is not allowed for sessions_spawn (allowed: none)",
    )
    assert isinstance(
        spawn(config, store, dispatcher, caller="agent:boxed:main", agentId="boxed"), SpawnResult
    )


def test_a_sandboxed_session_cannot_spawn_an_unsandboxed_child() -> None:
    config, store, dispatcher = world()
    status, error = refusal(spawn(config, store, dispatcher, caller="agent:boxed:main", agentId="ops"))
    assert status == "forbidden"
    assert error.startswith("a sandboxed session cannot spawn an unsandboxed sub-agent")


def test_sandbox_require_needs_a_sandboxed_target() -> None:
    config, store, dispatcher = world()
    status, error = refusal(spawn(config, store, dispatcher, sandbox="require"))
    assert status == "forbidden"
    assert error.startswith('sandbox="require" needs a sandboxed target')


def test_model_and_thinking_are_checked() -> None:
    config, store, dispatcher = world()
    assert refusal(spawn(config, store, dispatcher, model="gpt/x")) == ("error", "invalid model: gpt/x")
    assert refusal(spawn(config, store, dispatcher, thinking="max")) == (
        "error",
        'Invalid thinking level "max". Use one of: off, minimal, low, medium, high.',
    )
    assert isinstance(spawn(config, store, dispatcher, model="slow/echo", thinking="high"), SpawnResult)


def test_checks_come_in_spec_order() -> None:
    config, store, dispatcher = world()
    # An invalid agent id is reported before the nested-spawn, allowlist and model checks.
    first = spawn(config, store, dispatcher)
    assert isinstance(first, SpawnResult)
    assert refusal(
        spawn(config, store, dispatcher, caller=first.child_session_key, agentId="BAD ID", model="x/y")
    )[1].startswith('Invalid agentId "BAD ID"')
    assert (
        refusal(spawn(config, store, dispatcher, caller=first.child_session_key, agentId="ops", model="x/y"))[
            1
        ]
        == "sessions_spawn is not allowed from sub-agent sessions"
    )
    assert refusal(spawn(config, store, dispatcher, agentId="ops", model="x/y"))[1].startswith(
        "agentId is not"
    )


def test_a_finished_child_announces_status_result_notes_and_stats() -> None:
    config, store, dispatcher = world()
    with_route(config, store, dispatcher)
    result = spawn(config, store, dispatcher, task="count the stars")
    assert isinstance(result, SpawnResult)
    steps = drain_flows(store, config, dispatcher)
    assert steps == ["run:subagent", "subagent_announce", "run:subagent_announce", "deliver", "run:note"]
    flow = flows.describe(store, result.run_id)
    assert flow is not None
    assert (flow.kind, flow.delivery_status) == ("spawn", "delivered")
    posted = store.flows.read_outbox("webchat", "ann")[0][1]["text"]
    lines = posted.splitlines()
    assert lines[0] == "Status: success"
    assert lines[1] == "Result: echo: Sub-agent announce step."
    assert lines[2] == "Notes: - (none)"
    assert lines[3].startswith("Stats: runtime 0s • tokens ")
    assert f"sessionKey {result.child_session_key}" in lines[3]
    note = store.transcripts.last(CALLER, 1)[0]
    assert note.text == posted
    assert note.provenance is not None
    assert (note.provenance.kind, note.provenance.source_session_key) == (
        "subagent_announce",
        result.child_session_key,
    )
    child = store.sessions.get(result.child_session_key)
    assert child is not None
    assert child.status == "done"


def test_status_comes_from_the_runtime_not_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    config, store, dispatcher = world()

    class FailsThenBoasts:
        history_window = 1

        def step(self, request: Any) -> StepResult:
            if request.messages[-1].text.startswith("[Subagent Task]"):
                raise RuntimeError("disk full")
            return StepResult(reply="Result: all good, success!\nNotes: nothing")

    monkeypatch.setattr("shared.execution.runtime_for", lambda *_: FailsThenBoasts())
    result = spawn(config, store, dispatcher)
    assert isinstance(result, SpawnResult)
    drain_flows(store, config, dispatcher)
    posted = store.flows.read_outbox("log", CALLER)[0][1]["text"].splitlines()
    assert posted[:4] == [
        "Status: error",
        "Result: all good, success!",
        "Notes: nothing",
        "- Error: RuntimeError: disk full",
    ]


def test_a_child_over_its_run_timeout_announces_timeout() -> None:
    config, store, dispatcher = world()
    result = spawn(config, store, dispatcher, model="slow/echo", runTimeoutSeconds=0.05)
    assert isinstance(result, SpawnResult)
    drain_flows(store, config, dispatcher)
    run = store.runs.get(result.run_id)
    assert run is not None
    assert run.status == "timeout"
    assert "runTimeoutSeconds=0.05" in (run.error or "")
    assert store.flows.read_outbox("log", CALLER)[0][1]["text"].startswith("Status: timeout")


def test_the_default_run_timeout_comes_from_the_config() -> None:
    config, store, dispatcher = world(
        {"agents": {**BASE["agents"], "defaults": {"subagents": {"runTimeoutSeconds": 7}}}}
    )
    result = spawn(config, store, dispatcher)
    assert isinstance(result, SpawnResult)
    run = store.runs.get(result.run_id)
    assert run is not None
    assert run.timeout_ms == 7000


def test_announce_skip_posts_nothing() -> None:
    config, store, dispatcher = world(
        {
            "models": {
                "providers": {
                    "quiet": {
                        "type": "script",
                        "rules": [{"match": "^Sub-agent announce step", "reply": "ANNOUNCE_SKIP"}],
                    }
                }
            },
            "agents": {"list": [{"id": "main", "default": True, "model": "quiet/script"}]},
        }
    )
    result = spawn(config, store, dispatcher)
    assert isinstance(result, SpawnResult)
    drain_flows(store, config, dispatcher)
    flow = flows.describe(store, result.run_id)
    assert flow is not None
    assert flow.delivery_status == "skipped"
    assert store.flows.read_outbox("log", CALLER) == []


def test_cleanup_delete_removes_the_child_after_the_announce() -> None:
    config, store, dispatcher = world()
    result = spawn(config, store, dispatcher, cleanup="delete")
    assert isinstance(result, SpawnResult)
    drain_flows(store, config, dispatcher)
    assert store.sessions.get(result.child_session_key) is None
    assert store.transcripts.length(result.child_session_key) == 0
    assert store.flows.read_outbox("log", CALLER)[0][1]["text"].startswith("Status: success")


def test_sub_agent_sessions_get_no_session_tools() -> None:
    config, store, dispatcher = world()
    result = spawn(config, store, dispatcher)
    assert isinstance(result, SpawnResult)
    child = ToolContext.for_caller(config, store, dispatcher, result.child_session_key)
    refused = TOOLS["sessions_send"].refusal(child)
    assert refused is not None
    assert refused.error == "sessions_send is not available in sub-agent sessions (tools.subagents.tools)"
    assert TOOLS["sessions_spawn"].refusal(child) is None  # its own check answers
    assert TOOLS["sessions_send"].refusal(ToolContext.for_caller(config, store, dispatcher, CALLER)) is None
    run = store.runs.get(result.run_id)
    assert run is not None
    assert "You have no tools." in (run.context or "")


def test_the_child_is_told_the_tools_its_configuration_gives_it() -> None:
    config, store, dispatcher = world({"tools": {"subagents": {"tools": {"allow": ["sessions_list"]}}}})
    result = spawn(config, store, dispatcher)
    assert isinstance(result, SpawnResult)
    run = store.runs.get(result.run_id)
    assert run is not None
    assert "Your tools: sessions_list." in (run.context or "")


def test_agents_list_puts_the_requester_first_then_the_allowed() -> None:
    config, store, dispatcher = world()
    ctx = ToolContext.for_caller(config, store, dispatcher, CALLER)
    assert TOOLS["agents_list"].invoke(ctx, {}).wire() == {
        "requester": "main",
        "allowAny": False,
        "agents": [{"id": "main", "configured": True}, {"id": "research", "configured": True}],
    }
    boxed = ToolContext.for_caller(config, store, dispatcher, "agent:boxed:main")
    listed = TOOLS["agents_list"].invoke(boxed, {}).wire()
    assert listed["allowAny"] is True
    assert [a["id"] for a in listed["agents"]] == ["boxed", "main", "ops", "research"]


def test_subagent_keys_are_flat() -> None:
    config, store, dispatcher = world()
    result = spawn(config, store, dispatcher, agentId="research")
    assert isinstance(result, SpawnResult)
    parsed = keys.parse(result.child_session_key)
    assert parsed.agent_id == "research"
    assert parsed.rest.count(":") == 1
