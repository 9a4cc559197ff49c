"""Chains of agents through real workers (docs/contract.md §4, "Chains"): agents that pass every message on
to the next (a -> b -> c -> a) stop at the chain guards, with one refusal and no model call after it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from clawbus_client import Client
from clawbus_client.models import SessionsHistoryResult

from clawbus.shared.store.keys import RedisKeys
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, text, tool
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

RING = ("a", "b", "c")
MAINS = [f"agent:{agent}:main" for agent in RING]
ANNOUNCE = "Agent-to-agent announce step"


def relay(body: dict[str, Any]) -> Reply:
    """Each agent passes whatever it gets on to the next one's session of the same ring (``#<n>`` in the
    message names it; none: the agents' main sessions), without waiting; says it did once the send was
    accepted; stays silent at announces."""
    messages = body["messages"]
    if any(ANNOUNCE in str(m.get("content")) for m in messages if m["role"] == "system"):
        return text("ANNOUNCE_SKIP")
    if messages[-1]["role"] == "tool":
        return text("passed on")
    after = RING[(RING.index(body["model"]) + 1) % len(RING)]
    numbered = re.search(r"#(\d+)", str(messages[-1]["content"]))
    target = f"agent:{after}:ring-{numbered.group(1)}" if numbered else f"agent:{after}:main"
    message = f"pass it on #{numbered.group(1)}" if numbered else "pass it on"
    return tool("sessions_send", sessionKey=target, message=message, timeoutSeconds=0)


def ring_config(server: FakeOpenAI, **agent_to_agent: Any) -> dict[str, Any]:
    # Priced (USD per 1M tokens) and capped, so a chain budget's reservations are small and exact.
    models = [{"id": agent, "cost": {"input": 10.0, "output": 10.0}, "maxTokens": 50} for agent in RING]
    return {
        "session": {"agentToAgent": {"maxPingPongTurns": 0, **agent_to_agent}},
        "agents": {
            "entries": {
                agent: {"model": f"fake/{agent}", **({"default": True} if agent == "a" else {})}
                for agent in RING
            }
        },
        "models": {"providers": {"fake": {"type": "openai", "baseUrl": server.url, "models": models}}},
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    }


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with fake_openai(default=relay) as fake:
        yield fake


def ring(
    fresh: Fresh, server: FakeOpenAI, config: dict[str, Any] | None = None, **agent_to_agent: Any
) -> Client:
    fresh.start_redis(config=config or ring_config(server, **agent_to_agent))
    fresh.worker(concurrency=4)
    fresh.worker(concurrency=4)
    fresh.beat()
    _role, url = fresh.api()
    return Client(url, TOKEN)


def refusals(client: Client, keys: list[str] = MAINS) -> list[dict[str, Any]]:
    """Every chain refusal in the sessions' transcripts (a refused call's result, as its run recorded it)."""
    found = []
    for key in keys:
        history = client.sessions_history(key, include_tools=True, limit=1000)
        if not isinstance(history, SessionsHistoryResult):
            continue  # not opened yet
        for message in history.messages:
            if message["role"] == "toolResult" and '"guard"' in str(message["content"]):
                found.append(json.loads(message["content"][0]["text"]))
    return found


def quiet(client: Client, keys: list[str] = MAINS) -> bool:
    """No run queued or running in the sessions."""
    for key in keys:
        card = client.invoke("session_status", {"sessionKey": key})
        if card.get("runsQueued") or card.get("runsRunning"):
            return False
    return True


def asked_after_a_refusal(server: FakeOpenAI) -> bool:
    """Whether a model was asked to go on from a chain's refusal: a request whose last message is that
    tool result (a later run of the session may still carry it in its history)."""
    return any(
        body["messages"][-1]["role"] == "tool" and "chain stopped" in str(body["messages"][-1]["content"])
        for body in server.requests
    )


def the_one_refusal(client: Client) -> dict[str, Any]:
    """Start the relay at a; once it stopped and went quiet, its refusal (there must be one only)."""
    client.post_message("agent:a:main", "start the relay", timeout_seconds=0)
    [refused] = wait_for(lambda: refusals(client), 60, what="the chain's refusal")
    wait_for(lambda: quiet(client), 30, what="the ring to go quiet")
    assert refusals(client) == [refused]
    return refused


def test_a_three_agent_cycle_stops_at_the_guard_with_one_refusal_and_no_model_call_after(
    fresh: Fresh, server: FakeOpenAI
) -> None:
    with ring(fresh, server) as client:
        refused = the_one_refusal(client)
        # Around the ring twice (each session comes back once: maxCycles 1), then back to a once more.
        assert refused["status"] == "forbidden"
        assert refused["guard"] == "maxCycles"
        assert refused["path"] == [*MAINS, *MAINS, MAINS[0]]
        assert refused["error"].endswith("path: a -> b -> c -> a -> b -> c -> a")
        sends = [body for body in server.requests if body["messages"][-1]["role"] == "user"]
        sends = [body for body in sends if "pass it on" in str(body["messages"][-1]["content"])]
        assert len(sends) == 5  # five messages passed on before the stop
        # The run that was refused asked its model nothing more.
        assert not asked_after_a_refusal(server)


def test_fifty_chains_at_once_on_two_workers_each_stop_exactly_at_max_hops(
    fresh: Fresh, server: FakeOpenAI
) -> None:
    with ring(fresh, server, maxHops=4, maxCycles=64) as client:
        # Fifty rings of their own (agent a's, b's and c's sessions ring-<n>), all started at once.
        rings = [[f"agent:{agent}:ring-{n}" for agent in RING] for n in range(50)]
        for key in (key for keys in rings for key in keys[1:]):
            client.open_session(key)  # a send opens no session
        for n, (start, *_) in enumerate(rings):
            client.post_message(start, f"start the relay #{n}", timeout_seconds=0)
        keys = [key for keys in rings for key in keys]
        wait_for(lambda: len(refusals(client, keys)) >= 50, 120, what="50 refusals")
        wait_for(lambda: quiet(client, keys), 60, what="the rings to go quiet")
        found = refusals(client, keys)
        assert len(found) == 50
        # Each chain was refused once, at its fifth send: its path is its start and the four hops it made
        # (around its ring once, and on to b), then the target it was refused.
        assert sorted(refusal["path"] for refusal in found) == sorted([*r, *r] for r in rings)
        assert {refusal["guard"] for refusal in found} == {"maxHops"}


def test_a_chain_budget_stops_its_spend_within_a_calls_reservation(fresh: Fresh, server: FakeOpenAI) -> None:
    limit_usd = 0.01  # a call spends 0.0012 USD (120 tokens at 10 USD per 1M) and reserves a little more
    with ring(fresh, server, maxHops=64, maxCycles=64, maxChainCostUsd=limit_usd) as client:
        started = client.post_message("agent:a:main", "start the relay", timeout_seconds=0)
        assert started.run_id is not None
        assert fresh.redis_server is not None
        redis = fresh.redis_server.client()
        keys = RedisKeys()

        def refused() -> list[str]:
            errors = (redis.hget(key, "error") for key in redis.scan_iter(f"{keys.run_prefix()}*"))
            return [error for error in errors if error and "maxChainCostUsd" in error]

        [error, *_] = wait_for(refused, 60, what="the chain's budget refusal")
        wait_for(lambda: quiet(client), 30, what="the ring to go quiet")
        assert error.startswith("budget exceeded: maxChainCostUsd (")
        spent = int(redis.hget(keys.chain_spent(started.run_id), "usdMicros") or 0)
        # Never past the limit; stopped once one more call's worst case would have passed it.
        assert limit_usd * 1_000_000 / 2 < spent <= limit_usd * 1_000_000
        calls = len(server.requests)
        assert spent == calls * 1_200  # every call made was charged, exactly


def through_a_sub_agent(body: dict[str, Any]) -> Reply:
    """a passes every message on to b; b has a sub-agent (of agent c) look into it, and passes the report on
    to a; c's sub-agent answers."""
    messages = body["messages"]
    last = str(messages[-1]["content"])
    if any(ANNOUNCE in str(m.get("content")) for m in messages if m["role"] == "system"):
        return text("ANNOUNCE_SKIP")
    if messages[-1]["role"] == "tool":
        return text("passed on")
    if body["model"] == "c":
        return text("looked into it")
    if body["model"] == "b" and "pass it on" in last:
        return tool("sessions_spawn", task="look into it", agentId="c")
    target = "agent:a:main" if body["model"] == "b" else "agent:b:main"
    return tool("sessions_send", sessionKey=target, message="pass it on", timeoutSeconds=0)


def test_a_cycle_through_a_sub_agents_report_stops_at_the_guard(fresh: Fresh, server: FakeOpenAI) -> None:
    server.default = through_a_sub_agent
    config = ring_config(server)
    config["agents"]["entries"]["b"]["subagents"] = {"allowAgents": ["c"]}
    with ring(fresh, server, config) as client:
        refused = the_one_refusal(client)
        # a -> b, b's sub-agent reports back to b (no hop), b -> a, a -> b, a second sub-agent, and b's send
        # back to a, on the path twice already, is refused.
        assert refused["guard"] == "maxCycles"
        hops = [key for key in refused["path"] if ":subagent:" not in key]
        assert hops == ["agent:a:main", "agent:b:main", "agent:a:main", "agent:b:main", "agent:a:main"]
        assert not asked_after_a_refusal(server)
