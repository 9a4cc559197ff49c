"""shared/tools/spawn.py: ``context: "fork" | "isolated"`` (docs/contract.md §6): a forked child starts with
the requester's transcript so far."""

from __future__ import annotations

from typing import Any

from clawbus.shared.commands.inbound import receive
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import InboundMessageParams, ToolFailure
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World, world

REQUESTER = "agent:main:webchat:direct:ann"


def fleet() -> World:
    return world(
        {
            "agents": {
                "list": [
                    {"id": "main", "default": True, "subagents": {"allowAgents": ["research"]}},
                    {"id": "research"},
                ]
            },
            "tools": {"sessions": {"visibility": "all"}},
        }
    )


def talked(w: World, *texts: str) -> ToolContext:
    """The requester after a conversation: each text a message of ann's, answered."""
    requester = w.context(REQUESTER)
    for text in texts:
        receive(requester, InboundMessageParams(message=text, channel="webchat", to="ann", timeout_seconds=0))
        w.drain()
    return requester


def spawn(ctx: ToolContext, **args: Any) -> SpawnResult | ToolFailure:
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "go on from here", **args})
    assert isinstance(result, SpawnResult | ToolFailure)
    return result


def test_a_forked_child_starts_with_the_requesters_transcript_then_its_task() -> None:
    w = fleet()
    requester = talked(w, "the plan is A", "then B")
    result = spawn(requester, context="fork")
    assert isinstance(result, SpawnResult)
    assert result.context == "fork"
    w.drain_runs()
    child = [m.text for m in w.store.transcripts.last(result.child_session_key, 20)]
    assert child[:4] == ["the plan is A", "echo: the plan is A", "then B", "echo: then B"]
    assert child[4] == "[Subagent Task]: go on from here"


def test_an_isolated_child_starts_with_its_task_alone() -> None:
    w = fleet()
    requester = talked(w, "the plan is A")
    result = spawn(requester)
    assert isinstance(result, SpawnResult)
    assert result.context == "isolated"
    w.drain_runs()
    assert w.store.transcripts.last(result.child_session_key, 1, keep=lambda m: m.role == "user")[0].text == (
        "[Subagent Task]: go on from here"
    )
    assert len(w.store.transcripts.last(result.child_session_key, 20)) == 2


def test_a_fork_needs_the_same_agent_and_a_transcript_to_fork() -> None:
    w = fleet()
    requester = talked(w, "hi")
    other = spawn(requester, context="fork", agentId="research")
    assert isinstance(other, ToolFailure)
    assert other.error == (
        'context="fork" currently requires the same target agent as the requester; use context="isolated" '
        "for cross-agent spawns."
    )
    silent = w.context("agent:main:cron:never-spoke")
    missing = spawn(silent, context="fork")
    assert isinstance(missing, ToolFailure)
    assert missing.error == 'context="fork" requested but the requester session transcript is not available.'
    assert w.store.sessions.children("agent:main:cron:never-spoke") == []
