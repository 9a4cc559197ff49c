"""The loop guard through real workers: two scripted agents that relay every message to each other stop
when their chain of sends reaches session.agentToAgent.maxHops (OpenClaw's cycles ran all night)."""

from __future__ import annotations

import json
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

PING, PONG = "agent:ping:main", "agent:pong:main"
MAX_HOPS = 3
LIMIT_ERROR = f"agent-to-agent hop limit reached (maxHops={MAX_HOPS})"


def relay_to(target: str) -> dict[str, Any]:
    """A scripted agent that passes "relay" on to ``target`` and then says how that went."""
    return {
        "type": "script",
        "rules": [
            {
                "match": "^relay$",
                "tool": {
                    "name": "sessions_send",
                    "args": {"sessionKey": target, "message": "relay", "timeoutSeconds": 0},
                },
            },
            {"match": "hop limit reached", "reply": "stopped"},
            {"match": "accepted", "reply": "passed on"},
        ],
    }


def tool_results(client: Client, key: str) -> list[str]:
    history = client.sessions_history(key, include_tools=True, caller=key)
    assert isinstance(history, SessionsHistoryResult)
    return [
        block["text"]
        for m in history.messages
        if m["role"] == "toolResult"
        for block in m["content"]  # type: ignore[attr-defined]
    ]


def test_agents_relaying_to_each_other_stop_at_the_hop_limit(fresh: Fresh) -> None:
    fresh.start_redis(
        config={
            "session": {"agentToAgent": {"maxPingPongTurns": 0, "maxHops": MAX_HOPS}},
            "agents": {
                "list": [
                    {"id": "main", "default": True},
                    {"id": "ping", "model": "toping/script"},
                    {"id": "pong", "model": "topong/script"},
                ]
            },
            "models": {"providers": {"toping": relay_to(PONG), "topong": relay_to(PING)}},
        }
    )
    fresh.worker()
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        started = client.post_message(PING, "relay", timeout_seconds=30)
        assert isinstance(started, SendResult)
        assert started.reply == "passed on"
        # The inbound run is no send; ping -> pong -> ping -> pong are the chain's three sends, and the
        # fourth, from pong's run at hop 3, is refused.
        refused = wait_for(
            lambda: [t for t in tool_results(client, PONG) if LIMIT_ERROR in t], 30, what="the refused send"
        )
        assert json.loads(refused[0])["status"] == "error"
        sent = [json.loads(t) for key in (PING, PONG) for t in tool_results(client, key)]
        assert sum(result.get("status") == "accepted" for result in sent) == MAX_HOPS
        assert len(refused) == 1
