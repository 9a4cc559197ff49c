"""The chain guards through real workers and the `script` runtime: two scripted agents that relay every
message to each other stop when their chain reaches session.agentToAgent.maxHops (OpenClaw's cycles ran all
night), with one refusal and no model step after it."""

from __future__ import annotations

import json
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

PING, PONG = "agent:ping:main", "agent:pong:main"
MAX_HOPS = 3
LIMIT_ERROR = f"it already has {MAX_HOPS} hops (session.agentToAgent.maxHops is {MAX_HOPS})"


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
            # Never matched: a refused hop ends its run with no model step to read the refusal.
            {"match": "chain stopped", "reply": "stopped"},
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
            # maxCycles out of the way: ping and pong come back to each other at every hop.
            "session": {"agentToAgent": {"maxPingPongTurns": 0, "maxHops": MAX_HOPS, "maxCycles": 8}},
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
        assert (json.loads(refused[0])["status"], json.loads(refused[0])["guard"]) == ("forbidden", "maxHops")

        def accepted() -> int:
            results = [json.loads(t) for key in (PING, PONG) for t in tool_results(client, key)]
            return sum(result.get("status") == "accepted" for result in results)

        # (the run that made the last send may still be committing its answer)
        wait_for(lambda: accepted() == MAX_HOPS, 30, what="the chain's sends")
        assert len(refused) == 1
        # The refused run asked its model nothing more: no reply read the refusal.
        replies = client.sessions_history(PONG, caller=PONG)
        assert isinstance(replies, SessionsHistoryResult)
        assert "stopped" not in json.dumps(replies.messages)


def test_three_script_agents_in_a_ring_stop_at_the_cycle_guard_by_default(fresh: Fresh) -> None:
    """a -> b -> c -> a, every message passed on, nothing configured but the ring: the chain goes around
    twice (each session comes back once: maxCycles 1) and the sixth send, back to a, is refused."""
    ring = ["agent:a:main", "agent:b:main", "agent:c:main"]
    fresh.start_redis(
        config={
            "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            "agents": {
                "entries": {
                    name: {"model": f"to{name}/script", **({"default": True} if name == "a" else {})}
                    for name in ("a", "b", "c")
                }
            },
            "models": {
                "providers": {
                    f"to{name}": relay_to(ring[(i + 1) % 3]) for i, name in enumerate(("a", "b", "c"))
                }
            },
            "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
        }
    )
    fresh.worker()
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        for key in ring[1:]:
            client.open_session(key)
        client.post_message(ring[0], "relay", timeout_seconds=0)
        refused = wait_for(
            lambda: [t for t in tool_results(client, ring[2]) if '"guard"' in t], 30, what="the refused send"
        )
        [result] = [json.loads(text) for text in refused]
        assert (result["status"], result["guard"]) == ("forbidden", "maxCycles")
        assert result["path"] == [*ring, *ring, ring[0]]

        def results() -> list[dict[str, Any]]:
            return [json.loads(t) for key in ring for t in tool_results(client, key)]

        # Five messages passed on (the run that sent the fifth may still be committing its answer).
        wait_for(lambda: sum(one.get("status") == "accepted" for one in results()) == 5, 30, what="5 sends")
        assert sum("guard" in one for one in results()) == 1
