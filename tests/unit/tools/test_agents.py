"""shared/tools/agents.py, agents_list (docs/contract.md §6): the agents a session may spawn, its own agent
first, then exactly the configured agents its allow list names (all of them for ``*``)."""

from __future__ import annotations

from typing import Any

from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.agents_schema import AgentsListResult
from clawbus.workers.testing import world

AGENTS = {
    "agents": {
        "list": [
            # "ghost" is allow-listed but not configured: sessions_spawn refuses it, so it is not offered.
            {
                "id": "main",
                "default": True,
                "name": "Main",
                "subagents": {"allowAgents": ["research", "ghost"]},
            },
            {"id": "research", "model": "slow/echo"},
            {"id": "ops"},
            {"id": "boxed", "subagents": {"allowAgents": ["*"]}},
        ]
    },
    "models": {"providers": {"slow": {"type": "echo", "delayMs": 300}}},
}
RUNTIME = {"id": "auto", "source": "implicit"}


def listed(caller: str) -> dict[str, Any]:
    result = TOOLS["agents_list"].invoke(world(AGENTS).context(caller), {})
    assert isinstance(result, AgentsListResult)
    return result.wire()


def test_the_callers_agent_comes_first_then_the_configured_agents_it_may_spawn() -> None:
    assert listed("main") == {
        "requester": "main",
        "allowAny": False,
        "agents": [
            {"id": "main", "name": "Main", "configured": True, "model": "echo/echo", "agentRuntime": RUNTIME},
            {"id": "research", "configured": True, "model": "slow/echo", "agentRuntime": RUNTIME},
        ],
    }


def test_an_agent_that_may_spawn_any_is_offered_every_configured_agent() -> None:
    offered = listed("agent:boxed:main")
    assert (offered["requester"], offered["allowAny"]) == ("boxed", True)
    assert [row["id"] for row in offered["agents"]] == ["boxed", "main", "ops", "research"]


def test_an_agent_with_no_allow_list_is_offered_only_itself() -> None:
    offered = listed("agent:ops:cron:nightly")
    assert (offered["requester"], offered["allowAny"]) == ("ops", False)
    assert [row["id"] for row in offered["agents"]] == ["ops"]
