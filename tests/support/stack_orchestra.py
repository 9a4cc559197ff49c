"""An orchestration tree on the real stack (tests/support/stack.py): agents ``main`` (an orchestrating
script) and ``worker`` (a leaf), a requester, an orchestrator spawned, and its report waited for."""

from __future__ import annotations

import uuid
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SessionsHistoryResult, SpawnResult

from clawbus.shared.tools.history_view import text_of
from tests.support.processes import wait_for

LEAVES = 3


def leaf() -> dict[str, Any]:
    # No label: labels are unique within an agent, and every tree spawns the same leaves.
    return {"name": "sessions_spawn", "args": {"task": "leaf work", "agentId": "worker"}}


def orchestra(leaves: int = LEAVES, leaf_ms: int = 1000, **subagents: Any) -> dict[str, Any]:
    """Top-level sections for ``Fresh.start_redis``: agents ``main`` (an orchestrating script, 1 s a step)
    and ``worker`` (a leaf that answers after ``leaf_ms``)."""
    return {
        "agents": {
            "defaults": {"subagents": {"maxSpawnDepth": 2, **subagents}},
            "list": [
                {
                    "id": "main",
                    "default": True,
                    "model": "orch/orch",
                    "subagents": {"allowAgents": ["worker"]},
                },
                {"id": "worker", "model": "leafy/leaf"},
            ],
        },
        "models": {
            "providers": {
                "orch": {
                    "type": "script",
                    "models": ["orch"],
                    "delayMs": 1000,
                    "rules": [
                        {
                            "match": r"^\[Subagent Task\]: orchestrate",
                            "tools": [leaf() for _ in range(leaves)],
                        },
                        {"match": r'"childSessionKey"', "tool": {"name": "sessions_yield", "args": {}}},
                        {"match": r"^Your sub-agents reported", "reply": "synthesized"},
                        # A leaf's report that came while it was not waiting (a leaf that ended before a
                        # retried yield, after a crash) is a run of its own: its reply is its result too.
                        {"match": r"^Status: ", "reply": "synthesized"},
                    ],
                },
                "leafy": {
                    "type": "script",
                    "models": ["leaf"],
                    "delayMs": leaf_ms,
                    "rules": [
                        # A leaf's task takes two steps (a tool round, then its answer): a steer sent
                        # during the first reaches the second.
                        # (sessions_yield, a tool a leaf keeps: with no child it answers that there
                        # is nothing to wait for, and the turn goes on.)
                        {
                            "match": r"^\[Subagent Task\]: leaf work",
                            "tool": {"name": "sessions_yield", "args": {}},
                        },
                        {"match": r"change of plan", "reply": "steered!"},
                        {"match": r"nothing to wait for", "reply": "leaf done"},
                    ],
                },
            }
        },
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    }


def requester(client: Client) -> str:
    key = f"agent:main:webchat:direct:{uuid.uuid4().hex[:8]}"
    client.post_message(key, "hello", channel="webchat", to=key.rsplit(":", 1)[1], timeout_seconds=0)
    return key


def spawn_orchestrator(client: Client, caller: str) -> SpawnResult:
    # Labels are unique within an agent: one per tree.
    label = f"boss-{uuid.uuid4().hex[:8]}"
    raw = client.invoke("sessions_spawn", {"task": "orchestrate", "label": label}, caller=caller)
    assert raw["status"] == "accepted", raw
    return SpawnResult.model_validate(raw)


def reports_to(client: Client, session_key: str) -> list[str]:
    history = client.sessions_history(session_key, include_tools=True)
    assert isinstance(history, SessionsHistoryResult)
    return [
        text_of(m)
        for m in history.messages
        if m.get("provenance", {}).get("kind") == "subagent_announce" and m["role"] == "user"
    ]


def finished(client: Client, caller: str, timeout: float = 60) -> str:
    [report] = wait_for(lambda: reports_to(client, caller), timeout, what="the orchestrator's report")
    return report
