"""shared/tools/spawn.py and the spawn flow: docs/contract.md §6's checks in order, the child, the announce, cleanup."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from clawbus.shared.base import session_keys
from clawbus.shared.base.clock import FixedClock
from clawbus.shared.base.errors import tool_input_error
from clawbus.shared.base.flow_ids import relay_run_id
from clawbus.shared.commands.inbound import receive
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import transcript_path
from clawbus.shared.flows import archive
from clawbus.shared.flows.view import describe
from clawbus.shared.ports.dispatch import DispatchUnavailable, StepTask
from clawbus.shared.ports.runtime import StepResult
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import DeliveryContext, InboundMessageParams, ToolFailure
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World
from tests.conftest import WorldFactory

CALLER = "agent:main:webchat:direct:ann"
THREAD = "agent:main:discord:group:42:thread:7"
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


# The depth at which direct children are leaves (the default is the release's 5).
DEPTH_ONE: dict[str, Any] = {"agents": {"defaults": {"subagents": {"maxSpawnDepth": 1}}}}


@pytest.fixture
def world(world: WorldFactory) -> WorldFactory:
    """This module's agents (who may spawn whom) under each test's own overrides."""
    return lambda *overrides: world(BASE, *overrides)


def spawn(w: World, caller: str = CALLER, **args: Any) -> SpawnResult | ToolFailure:
    ctx = w.context(caller)
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "find out", **args})
    assert isinstance(result, SpawnResult | ToolFailure)
    return result


def refusal(result: SpawnResult | ToolFailure) -> tuple[str, str]:
    assert isinstance(result, ToolFailure)
    return result.status, result.error


def with_route(w: World, key: str = CALLER) -> None:
    ctx = w.context(key)
    receive(ctx, InboundMessageParams(message="hi", channel="webchat", to="ann", timeout_seconds=0))
    w.drain()


def test_spawn_returns_at_once_with_the_child_session(world: WorldFactory) -> None:
    w = world()
    result = spawn(w, label="digger")
    assert isinstance(result, SpawnResult)
    assert (result.status, result.mode) == ("accepted", "run")
    assert result.child_session_key.startswith("agent:main:subagent:")
    child = w.store.sessions.get(result.child_session_key)
    assert child is not None
    assert (child.spawned_by, child.deliver, child.status, child.label, child.spawn_depth) == (
        CALLER,
        False,
        "running",
        "digger",
        1,
    )
    first = w.store.runs.get(result.run_id)
    assert first is not None
    assert first.kind == "subagent"
    assert [h.kind for h in w.dispatcher.heads] == ["subagent"]


def test_a_child_whose_enqueue_fails_is_still_accepted_and_the_reaper_enqueues_it(
    world: WorldFactory, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen with Redis restarted as an orchestrator spawned its leaves: the enqueue failed, the tool call
    raised, and the orchestrator's run ended in error while its child, accepted, ran on without it."""
    w = world()

    def redis_away(head: Any, delay_s: float = 0.0) -> None:
        raise DispatchUnavailable("enqueue of clawbus.run failed: Redis is away")

    monkeypatch.setattr(w.dispatcher, "dispatch_run", redis_away)
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    assert result.status == "accepted"
    clock.advance(w.config.runs.dispatch_grace_seconds + 1)
    assert [head.run_id for head in w.store.runs.reap()] == [result.run_id]


@pytest.mark.parametrize(
    "key", ["target", "transport", "channel", "to", "threadId", "thread_id", "replyTo", "reply_to"]
)
def test_channel_routing_keys_are_refused_by_the_name_sent(key: str, world: WorldFactory) -> None:
    w = world()
    with pytest.raises(ValidationError) as caught:
        spawn(w, **{key: "x"})
    assert tool_input_error(caught.value.errors())[1] == (
        f'sessions_spawn does not support "{key}"; remove channel-delivery parameters.'
    )
    assert w.store.redis.keys("*") == []


@pytest.mark.parametrize("key", ["timeoutSeconds", "timeout_seconds"])
def test_a_send_timeout_is_refused_pointing_at_run_timeout_seconds(key: str, world: WorldFactory) -> None:
    w = world()
    with pytest.raises(ValidationError) as caught:
        spawn(w, **{key: 5})
    assert tool_input_error(caught.value.errors())[1] == (
        f'sessions_spawn does not support "{key}". Use "runTimeoutSeconds" for a per-run timeout.'
    )


@pytest.mark.parametrize("task", [None, "", "   ", 123])
def test_a_missing_task_is_refused_in_the_releases_words(task: object, world: WorldFactory) -> None:
    w = world()
    ctx = w.context(CALLER)
    with pytest.raises(ValidationError, match="task required"):
        TOOLS["sessions_spawn"].invoke(ctx, {} if task is None else {"task": task})


def test_the_accepted_result_has_the_releases_keys(world: WorldFactory) -> None:
    w = world()
    result = spawn(w, label="probe")
    assert isinstance(result, SpawnResult)
    assert result.wire() == {
        "status": "accepted",
        "childSessionKey": result.child_session_key,
        "runId": result.run_id,
        "mode": "run",
        "expectsCompletionMessage": True,
        "context": "isolated",
        "note": (
            "The final reply returns to the requester as a completion event. Continue any independent work. "
            "Wait for completion events for ALL required children before your final answer; never busy-poll. "
            "If a completion arrives after your final answer, reply ONLY with NO_REPLY."
        ),
        "resolvedModel": "echo/echo",
        "resolvedProvider": "echo",
        "modelApplied": True,
    }


def test_session_mode_needs_a_thread_and_thread_defaults_to_session_mode(world: WorldFactory) -> None:
    w = world()
    assert refusal(spawn(w, mode="session")) == (
        "error",
        'sessions_spawn(mode="session") requires thread=true so the subagent can stay bound to a channel '
        'thread. Retry with { mode: "session", thread: true } on a channel that supports threads, or use '
        'mode="run" for one-shot work.',
    )
    result = spawn(w, caller=THREAD, thread=True, cleanup="delete")
    assert isinstance(result, SpawnResult)
    assert result.mode == "session"
    child = w.store.sessions.get(result.child_session_key)
    assert child is not None
    assert child.cleanup == "keep"  # always kept in session mode


def test_a_thread_bound_child_posts_into_the_callers_thread(world: WorldFactory) -> None:
    w = world()
    result = spawn(w, caller=THREAD, thread=True)
    assert isinstance(result, SpawnResult)
    child = w.store.sessions.get(result.child_session_key)
    assert child is not None
    assert child.delivery_context == DeliveryContext(channel="discord", to="42", thread_id="7")


@pytest.mark.parametrize(
    ("caller", "error"),
    [
        (
            CALLER,
            'thread=true needs a channel with threads (discord, slack, telegram); this session posts to "webchat"',
        ),
        (
            "agent:main:slack:channel:c42",
            "thread=true binds the sub-agent to the slack thread this session is in, and "
            "agent:main:slack:channel:c42 is in none (its key would end in :thread:<id> or :topic:<id>)",
        ),
        (
            # Discord opens a thread, but only with a bot token to do it with (shared/intake/threads.py).
            "agent:main:discord:group:42",
            "thread=true opens a discord thread only with a discord channel configured (channels.discord: "
            "a bot token) and channels.discord.threadBindings enabled with spawnSessions; "
            "agent:main:discord:group:42 is in no thread to bind instead",
        ),
    ],
)
def test_thread_true_is_refused_where_there_is_no_thread_to_bind(
    world: WorldFactory, caller: str, error: str
) -> None:
    w = world()
    assert refusal(spawn(w, caller=caller, thread=True)) == ("error", error)


def test_an_invalid_agent_id_gets_the_spec_text(world: WorldFactory) -> None:
    w = world()
    assert refusal(spawn(w, agentId="Not Valid!")) == (
        "error",
        'Invalid agentId "Not Valid!". Agent IDs must match [a-z0-9][a-z0-9_-]{0,63}. '
        "Use agents_list to discover valid targets.",
    )


def test_a_sub_agent_may_not_spawn_at_a_max_spawn_depth_of_one(world: WorldFactory) -> None:
    w = world(DEPTH_ONE)
    first = spawn(w)
    assert isinstance(first, SpawnResult)
    assert refusal(spawn(w, caller=first.child_session_key)) == (
        "forbidden",
        "sessions_spawn is not allowed from sub-agent sessions at depth 1 (subagents.maxSpawnDepth is 1)",
    )


def test_the_allowlist_decides_other_agents(world: WorldFactory) -> None:
    w = world()
    assert isinstance(spawn(w, agentId="research"), SpawnResult)
    assert isinstance(spawn(w, agentId="main"), SpawnResult)  # its own agent
    assert refusal(spawn(w, agentId="ops")) == (
        "forbidden",
        "agentId is not allowed for sessions_spawn (allowed: main, research)",
    )
    refused = spawn(w, agentId="ops")
    assert isinstance(refused, ToolFailure)
    assert refused.wire() == {"status": "forbidden", "error": refused.error, "role": "ops"}
    assert refusal(spawn(w, caller="agent:research:main", agentId="main")) == (
        "forbidden",
        "agentId is not allowed for sessions_spawn (allowed: research)",
    )
    assert isinstance(spawn(w, caller="agent:boxed:main", agentId="boxed"), SpawnResult)


def test_a_sandboxed_session_cannot_spawn_an_unsandboxed_child(world: WorldFactory) -> None:
    w = world()
    status, error = refusal(spawn(w, caller="agent:boxed:main", agentId="ops"))
    assert (status, error) == (
        "forbidden",
        "Sandboxed sessions cannot spawn unsandboxed subagents. Set a sandboxed target agent or use the same agent runtime.",
    )


def test_sandbox_require_needs_a_sandboxed_target(world: WorldFactory) -> None:
    w = world()
    status, error = refusal(spawn(w, sandbox="require"))
    assert (status, error) == (
        "forbidden",
        'sessions_spawn sandbox="require" needs a sandboxed target runtime. Pick a sandboxed agentId or use sandbox="inherit".',
    )


def test_model_and_thinking_are_checked(world: WorldFactory) -> None:
    w = world()
    assert refusal(spawn(w, model="gpt/x")) == (
        "error",
        'sessions_spawn model "gpt/x" is not usable: Unknown model: gpt/x (configured: echo/echo, slow/echo)',
    )
    # A bare id is the default provider's; "default" is no override.
    bare = spawn(w, model="echo")
    assert isinstance(bare, SpawnResult)
    assert bare.resolved_model == "echo/echo"
    assert isinstance(spawn(w, model="default"), SpawnResult)
    assert refusal(spawn(w, thinking="max")) == (
        "error",
        'Invalid thinking level "max". Use one of: off, minimal, low, medium, high.',
    )
    assert isinstance(spawn(w, model="slow/echo", thinking="high"), SpawnResult)


def test_checks_come_in_spec_order(world: WorldFactory) -> None:
    w = world(DEPTH_ONE)
    # An invalid agent id is reported before the nested-spawn, allowlist and model checks.
    first = spawn(w)
    assert isinstance(first, SpawnResult)
    assert refusal(spawn(w, caller=first.child_session_key, agentId="BAD ID", model="x/y"))[1].startswith(
        'Invalid agentId "BAD ID"'
    )
    assert (
        refusal(spawn(w, caller=first.child_session_key, agentId="ops", model="x/y"))[1]
        == "sessions_spawn is not allowed from sub-agent sessions at depth 1 (subagents.maxSpawnDepth is 1)"
    )
    assert refusal(spawn(w, agentId="ops", model="x/y"))[1].startswith("agentId is not")


def test_a_finished_child_reports_its_latest_reply_with_status_notes_and_stats(world: WorldFactory) -> None:
    w = world()
    with_route(w)
    result = spawn(w, task="count the stars")
    assert isinstance(result, SpawnResult)
    steps = w.drain()
    # No model step on the child: its reply is its result, and its requester's relay is what is posted.
    assert steps == ["run:subagent", "deliver", "run:relay", "deliver"]
    flow = describe(w.store, result.run_id)
    assert flow is not None
    assert (flow.kind, flow.delivery_status) == ("spawn", "delivered")
    [posted] = _reports(w.store)
    lines = posted.splitlines()
    assert lines[0] == "Status: success"
    assert lines[1] == "Result: echo: [Subagent Task]: count the stars"
    assert lines[2] == "Notes: - (none)"
    assert lines[3].startswith("Stats: runtime 0s • tokens ")
    assert f"sessionKey {result.child_session_key}" in lines[3]
    note, relay = w.store.transcripts.last(CALLER, 2)
    assert note.text == posted
    assert relay.text == f"echo: {posted}"
    assert note.provenance is not None
    assert (note.provenance.kind, note.provenance.source_session_key) == (
        "subagent_announce",
        result.child_session_key,
    )
    child = w.store.sessions.get(result.child_session_key)
    assert child is not None
    assert child.status == "done"
    assert w.store.transcripts.length(result.child_session_key) == 2  # its task and its reply, nothing more


def test_a_failed_child_reports_error_with_its_error_in_the_notes(
    monkeypatch: pytest.MonkeyPatch, world: WorldFactory
) -> None:
    w = world()

    class Fails:
        history_window = 1
        repeatable = False

        def step(self, request: Any) -> StepResult:
            raise RuntimeError("disk full")

    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_: Fails())
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    w.drain()
    posted = _reports(w.store)[0].splitlines()
    assert posted[:3] == ["Status: error", "Result: (no result)", "Notes: - Error: RuntimeError: disk full"]


def test_a_child_over_its_run_timeout_announces_timeout(world: WorldFactory) -> None:
    w = world()
    w = dataclasses.replace(
        w,
        config=w.config.model_copy(
            update={
                "models": Config.model_validate(
                    {"models": {"providers": {"slow": {"type": "echo", "delayMs": 1500}}}}
                ).models
            }
        ),
    )
    result = spawn(w, model="slow/echo", runTimeoutSeconds=1)
    assert isinstance(result, SpawnResult)
    w.drain()
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert run.status == "timeout"
    assert "runTimeoutSeconds=1" in (run.error or "")
    assert _reports(w.store)[0].startswith("Status: timeout")


def test_the_default_run_timeout_comes_from_the_config(world: WorldFactory) -> None:
    w = world({"agents": {**BASE["agents"], "defaults": {"subagents": {"runTimeoutSeconds": 7}}}})
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert run.timeout_ms == 7000


@pytest.mark.parametrize("token", ["ANNOUNCE_SKIP", "NO_REPLY"])
def test_a_child_replying_a_silent_token_posts_nothing(world: WorldFactory, token: str) -> None:
    w = world(
        {
            "models": {
                "providers": {
                    "quiet": {"type": "script", "rules": [{"match": r"^\[Subagent Task\]", "reply": token}]}
                }
            },
            "agents": {"list": [{"id": "main", "default": True, "model": "quiet/script"}]},
        }
    )
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    w.drain()
    flow = describe(w.store, result.run_id)
    assert flow is not None
    assert flow.delivery_status == "skipped"
    assert w.store.flows.read_outbox("webchat", "ann") == []
    assert w.store.runs.get(relay_run_id(result.run_id)) is None  # the requester is not asked either


def test_cleanup_delete_removes_the_child_after_its_report_and_keeps_its_transcript(
    world: WorldFactory,
) -> None:
    w = world()
    result = spawn(w, cleanup="delete")
    assert isinstance(result, SpawnResult)
    child = w.store.sessions.get(result.child_session_key)
    assert child is not None
    w.drain()
    assert w.store.sessions.get(result.child_session_key) is None
    assert w.store.transcripts.length(result.child_session_key) == 0
    assert _reports(w.store)[0].startswith("Status: success")
    # Kept at its transcriptPath, as the release keeps a deleted session's transcript.
    kept = Path(transcript_path(w.config.store_url(), child)).read_text().splitlines()
    assert json.loads(kept[0])["content"][0]["text"] == "[Subagent Task]: find out"


def _child_ran(w: World) -> SpawnResult:
    """A spawned child whose own run ended, before its report (the run task's callback)."""
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    w.drain_runs()
    return result


def _reports(store: Store) -> list[str]:
    """The reports the requester got, in its transcript (what reaches its channel is its relay of each:
    tests/unit/test_completions.py)."""
    return [
        m.text
        for m in store.transcripts.last(CALLER, 100)
        if m.provenance is not None and m.provenance.kind == "subagent_announce"
    ]


def test_a_child_with_more_messages_queued_reports_the_run_it_was_spawned_for(world: WorldFactory) -> None:
    w = world()
    result = _child_ran(w)
    child_ctx = w.context(result.child_session_key)
    receive(child_ctx, InboundMessageParams(message="one more thing", timeout_seconds=0))
    w.drain()
    reports = _reports(w.store)
    assert len(reports) == 1
    assert reports[0].splitlines()[:2] == ["Status: success", "Result: echo: [Subagent Task]: find out"]


def test_a_child_whose_session_was_deleted_still_reports(world: WorldFactory) -> None:
    w = world()
    result = _child_ran(w)
    child = w.store.sessions.get(result.child_session_key)
    assert child is not None
    archive.discard(w.config, w.store, child)
    w.dispatcher.step(StepTask.DELIVER, result.run_id)
    w.drain()
    reports = _reports(w.store)
    assert len(reports) == 1
    assert reports[0].startswith("Status: success\nResult: echo: [Subagent Task]: find out")


def test_a_leaf_keeps_only_sessions_yield_of_the_session_tools(world: WorldFactory) -> None:
    w = world(DEPTH_ONE)
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    child = w.context(result.child_session_key)
    refused = TOOLS["sessions_send"].refusal(child)
    assert refused is not None
    assert refused.error == "sessions_send is not available in sub-agent sessions (tools.subagents.tools)"
    assert TOOLS["sessions_spawn"].refusal(child) is None  # its own check answers
    assert TOOLS["sessions_send"].refusal(w.context(CALLER)) is None
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert "Your tools: sessions_yield." in (run.context or "")


def test_below_the_cap_a_child_keeps_its_tree_tools_and_never_the_hard_denied_ones(
    world: WorldFactory,
) -> None:
    w = world()
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    child = w.context(result.child_session_key)
    for kept in ("sessions_list", "sessions_history", "sessions_spawn", "sessions_yield", "subagents"):
        assert TOOLS[kept].refusal(child) is None
    for denied in ("sessions_send", "agents_list", "session_status"):
        refused = TOOLS[denied].refusal(child)
        assert refused is not None
        assert refused.error == f"{denied} is not available in sub-agent sessions (tools.subagents.tools)"
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert "Your tools: sessions_history, sessions_list, sessions_spawn, sessions_yield, subagents." in (
        run.context or ""
    )


def test_subagent_allow_cannot_grant_sessions_send(world: WorldFactory) -> None:
    w = world({"tools": {"subagents": {"tools": {"allow": ["sessions_send"]}}}})
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    child = w.context(result.child_session_key)
    refused = TOOLS["sessions_send"].refusal(child)
    assert refused is not None
    assert refused.status == "forbidden"
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert "You have no tools." in (run.context or "")


def test_an_orchestrator_whose_spawn_is_denied_is_refused_it(world: WorldFactory) -> None:
    w = world({"tools": {"subagents": {"tools": {"deny": ["sessions_spawn"]}}}})
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    refused = TOOLS["sessions_spawn"].refusal(w.context(result.child_session_key))
    assert refused is not None
    assert refusal(refused) == (
        "forbidden",
        "sessions_spawn is not available in sub-agent sessions (tools.subagents.tools)",
    )


def test_the_child_is_told_the_tools_its_configuration_gives_it(world: WorldFactory) -> None:
    w = world({"tools": {"subagents": {"tools": {"allow": ["sessions_list"]}}}})
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    run = w.store.runs.get(result.run_id)
    assert run is not None
    assert "Your tools: sessions_list." in (run.context or "")


def test_agents_list_offers_exactly_what_spawn_accepts(world: WorldFactory) -> None:
    w = world(
        {
            "agents": {
                "list": [
                    {"id": "main", "default": True, "subagents": {"allowAgents": ["research", "ghost"]}},
                    {"id": "research"},
                ]
            }
        }
    )
    ctx = w.context(CALLER)
    offered = [a["id"] for a in TOOLS["agents_list"].invoke(ctx, {}).wire()["agents"]]
    assert offered == ["main", "research"]  # "ghost" is allow-listed but not configured
    for agent_id in offered:
        assert isinstance(spawn(w, agentId=agent_id), SpawnResult)
    assert refusal(spawn(w, agentId="ghost"))[0] in ("error", "forbidden")


def test_subagent_keys_are_flat(world: WorldFactory) -> None:
    w = world()
    result = spawn(w, agentId="research")
    assert isinstance(result, SpawnResult)
    parsed = session_keys.parse(result.child_session_key)
    assert parsed.agent_id == "research"
    assert parsed.rest.count(":") == 1


def test_a_childs_run_task_carries_its_report_to_the_delivery_itself(world: WorldFactory) -> None:
    """On workers the child's run task carries the spawn on: the report in the requester's transcript,
    its relay run and the delivery to the webchat route, inside clawbus: one report, no step task."""
    w = world()
    with_route(w)
    result = spawn(w, task="count the stars")
    assert isinstance(result, SpawnResult)
    steps = w.drain(follow_inline=True)
    assert steps == ["run:subagent"]  # the relay ran inside the same task
    posted = _reports(w.store)
    assert len(posted) == 1
    assert posted[0].startswith("Status: success\nResult: echo: [Subagent Task]: count the stars")


def test_a_spawn_past_its_chains_window_is_refused_and_leaves_no_child(world: WorldFactory) -> None:
    w = world({"session": {"agentToAgent": {"maxChainSends": 1}}})
    first = spawn(w)
    assert isinstance(first, SpawnResult)
    # The child's own run spawning: the same chain, its second spawn.
    ctx = ToolContext.for_caller(w, first.child_session_key, first.run_id)
    refused = TOOLS["sessions_spawn"].invoke(ctx, {"task": "and again"})
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.guard) == ("forbidden", "maxChainSends")
    assert refused.path is not None
    assert refused.path[:2] == [CALLER, first.child_session_key]
    assert w.store.sessions.children(first.child_session_key) == []
    assert [key for key in w.store.sessions.children(CALLER)] == [first.child_session_key]


def test_a_spawns_flow_carries_its_childs_chain(world: WorldFactory) -> None:
    w = world()
    result = spawn(w)
    assert isinstance(result, SpawnResult)
    run, flow = w.store.runs.get(result.run_id), describe(w.store, result.run_id)
    assert run is not None
    assert flow is not None
    assert (flow.chain_id, flow.hops, flow.chain_path) == (
        run.chain_id,
        1,
        [CALLER, result.child_session_key],
    )
    assert run.chain_path == flow.chain_path
