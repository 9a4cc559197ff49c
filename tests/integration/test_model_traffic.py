"""Model traffic across the fleet (docs/architecture.md, "Model traffic" and "Budgets"), through real
workers: two worker processes call fake OpenAI-compatible providers, each of which stands for one model of
one account and may enforce that account's rate limits as a provider does (429s, ``x-ratelimit-*``).

No call beyond a model's limits reaches its provider; one 429 holds every worker off for its Retry-After;
a person's chat goes ahead of a sub-agent backlog; budgets stop an agent and a sub-agent tree at their
limits; a worker killed mid-call gives its place back when its hold lapses.

One stack (redis-server, the API, two workers) serves the module: each test has its own provider, model
and agents, so what one leaves behind (runs parked for a minute) counts against nobody else's limits.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from clawbus_client import Client
from clawbus_client.models import Run, SendResult, SpawnResult

from clawbus.shared.domain.traffic import CLASS_OF_KIND, CLASSES
from clawbus.shared.store.keys import RedisKeys
from tests.support.fake_openai import (
    FakeOpenAI,
    ProviderLimits,
    Reply,
    fake_openai,
    paced,
    text,
    tool,
    user_texts,
)
from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN, Fresh

CONCURRENT = 2
RPM = 60
# What the "learn" provider allows and says in its headers, while clawbus is told no limit.
LEARNED_RPM = 60
BUDGET_TOKENS = 2000
# USD per million tokens of the priced model: 1e-5 USD a token.
PRICE = {"input": 10.0, "output": 10.0}
TREE_USD = 0.02
# The crash test's provider: a call's hold lapses this + 30 s after its admission.
CRASH_TIMEOUT_SECONDS = 2
HOLD_MARGIN_SECONDS = 30
ENDED = ("ok", "error", "timeout", "aborted")


def _openai(server: FakeOpenAI, model: dict[str, Any], **provider: Any) -> dict[str, Any]:
    return {"type": "openai", "baseUrl": server.url, "models": [{"id": "gpt", **model}], **provider}


def _config(servers: dict[str, FakeOpenAI]) -> dict[str, Any]:
    return {
        "agents": {
            "defaults": {"subagents": {"maxTreeCostUsd": TREE_USD, "maxChildrenPerAgent": 10}},
            "list": [
                {"id": "main", "default": True, "subagents": {"allowAgents": ["fan", "spender"]}},
                {"id": "conc", "model": "conc/gpt"},
                {"id": "rpm", "model": "rpm/gpt"},
                {"id": "burst", "model": "burst/gpt"},
                {"id": "talker", "model": "prio/gpt"},
                {"id": "fan", "model": "prio/gpt"},
                {"id": "thrifty", "model": "budget/gpt", "budget": {"dailyTokens": BUDGET_TOKENS}},
                {"id": "spender", "model": "priced/gpt"},
                {"id": "crash", "model": "crash/gpt"},
                {"id": "learner", "model": "learn/gpt"},
            ],
        },
        "models": {
            "providers": {
                "conc": _openai(servers["conc"], {"limits": {"concurrent": CONCURRENT}}),
                "rpm": _openai(servers["rpm"], {"limits": {"requestsPerMinute": RPM}}),
                "burst": _openai(servers["burst"], {}),
                "learn": _openai(servers["learn"], {}),
                "prio": _openai(servers["prio"], {"limits": {"concurrent": 1}}),
                "budget": _openai(servers["budget"], {"maxTokens": 1000}),
                "priced": _openai(servers["priced"], {"maxTokens": 1000, "cost": PRICE}),
                "crash": _openai(
                    servers["crash"], {"limits": {"concurrent": 1}}, timeoutSeconds=CRASH_TIMEOUT_SECONDS
                ),
            }
        },
    }


@dataclass
class Traffic:
    fresh: Fresh
    url: str
    servers: dict[str, FakeOpenAI]
    workers: list[Role]

    def client(self) -> Client:
        return Client(self.url, TOKEN)

    def redis(self) -> redis.Redis:
        assert self.fresh.redis_server is not None
        return self.fresh.redis_server.client()


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Traffic]:
    root: Path = tmp_path_factory.mktemp("traffic")
    fresh = Fresh(root)
    with ExitStack() as servers:
        fakes = {
            name: servers.enter_context(fake_openai())
            for name in ("conc", "burst", "prio", "budget", "priced", "crash")
        }
        fakes["rpm"] = servers.enter_context(fake_openai(limits=ProviderLimits(requests_per_minute=RPM)))
        limits = ProviderLimits(requests_per_minute=LEARNED_RPM)
        fakes["learn"] = servers.enter_context(fake_openai(limits=limits))
        try:
            fresh.start_redis(config=_config(fakes))
            _, url = fresh.api()
            workers = [fresh.worker(concurrency=16) for _ in range(2)]
            yield Traffic(fresh, url, fakes, workers)
        finally:
            fresh.close()


@pytest.fixture
def client(traffic: Traffic) -> Iterator[Client]:
    with traffic.client() as c:
        yield c


def _post(client: Client, session_key: str, message: str) -> str:
    sent = client.post_message(session_key, message, timeout_seconds=0)
    assert isinstance(sent, SendResult), sent
    assert sent.status == "accepted", sent
    return sent.run_id


def _post_all(client: Client, messages: dict[str, str]) -> dict[str, str]:
    """``session key -> message``, all posted at once: ``message -> run id``."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(lambda item: _post(client, *item), messages.items()))
    return dict(zip(messages.values(), ids, strict=True))


def _ended(client: Client, run_ids: list[str], timeout: float) -> list[Run]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        runs = list(pool.map(lambda run_id: client.wait_run(run_id, timeout=timeout), run_ids))
    assert all(run is not None for run in runs), [r.status if r else None for r in runs]
    return [run for run in runs if run is not None]


def _throttled(client: Client, run_id: str) -> list[dict[str, Any]]:
    return [e for e in client.run_events(run_id) if e["type"] == "throttled"]


def _asked(server: FakeOpenAI, word: str) -> list[int]:
    """Which of the server's requests (their indexes) came from a run whose input was ``word``."""
    return [i for i, body in enumerate(list(server.requests)) if word in user_texts(body)]


def _traffic_keys(model: str) -> list[str]:
    return RedisKeys().traffic(model)


def test_calls_in_flight_never_pass_the_models_concurrent_limit_and_every_run_ends_ok(
    traffic: Traffic, client: Client
) -> None:
    server = traffic.servers["conc"]
    server.default = paced("done, slowly enough to overlap", 0.6)
    tag = uuid.uuid4().hex[:6]
    runs = _post_all(client, {f"agent:conc:cron:{tag}-{i}": f"c-{i}" for i in range(14)})

    ended = _ended(client, list(runs.values()), timeout=60)

    assert [run.status for run in ended] == ["ok"] * len(runs)
    assert len(server.requests) == len(runs)
    # The limit was reached, never passed, by the two workers together; the provider refused nothing.
    assert server.max_in_flight == CONCURRENT
    assert server.rate_limited == 0
    waited = [e for run_id in runs.values() for e in _throttled(client, run_id)]
    assert waited
    assert {e["reason"] for e in waited} == {"concurrent"}
    assert {e["class"] for e in waited} == {"people"}


def _spread(times: list[float]) -> float:
    return max(times) - min(times)


def test_a_backlog_past_requests_per_minute_reaches_the_provider_at_its_pace_and_never_past_its_limit(
    traffic: Traffic, client: Client
) -> None:
    server = traffic.servers["rpm"]  # enforces RPM itself, as the account would
    tag = uuid.uuid4().hex[:6]
    backlog = 12  # at RPM 60: a call a second, the backlog's last about 11 s after its first
    runs = _post_all(client, {f"agent:rpm:cron:{tag}-{i}": f"r-{i}" for i in range(backlog)})

    ended = _ended(client, list(runs.values()), timeout=60)

    assert [run.status for run in ended] == ["ok"] * backlog
    # None refused: nothing beyond the limit reached the provider, in any minute or at any moment.
    assert server.answered == backlog
    assert server.rate_limited == 0
    assert server.most_in_window() <= RPM
    # The calls started at the limit's pace (a call a second), not all at once. Timed where they arrive, not
    # where they were admitted: on a loaded machine a worker thread held for a moment sends a paced call
    # late, beside the next (seen once in a whole-suite run: three within 60 ms, a second apart after).
    assert server.most_in_window(3.0) <= 5, sorted(server.answered_at)
    assert _spread(server.answered_at) >= backlog - 3
    waited = {run_id: _throttled(client, run_id) for run_id in runs.values()}
    assert sum(bool(events) for events in waited.values()) >= backlog - 2
    assert {e["reason"] for events in waited.values() for e in events} == {"requests"}
    # Those far back in the line gave their worker slot back while they waited (parked, then resumed).
    park_ms = 3000
    assert any(int(e["waitMs"]) > park_ms for events in waited.values() for e in events)


def test_a_limit_the_provider_states_in_its_headers_is_kept_where_none_is_configured(
    traffic: Traffic, client: Client
) -> None:
    server = traffic.servers["learn"]
    tag = uuid.uuid4().hex[:6]
    first = client.wait_run(_post(client, f"agent:learner:cron:{tag}-first", "first"), timeout=30)
    assert first is not None
    assert first.status == "ok"
    state = traffic.redis().hgetall(_traffic_keys("learn/gpt")[8])
    assert state["learnedRpm"] == str(LEARNED_RPM)

    runs = _post_all(client, {f"agent:learner:cron:{tag}-{i}": f"l-{i}" for i in range(5)})
    ended = _ended(client, list(runs.values()), timeout=30)

    assert [run.status for run in ended] == ["ok"] * len(runs)
    # Sent at the pace of what the provider said (a call a second), though nothing was configured.
    assert _spread(server.answered_at[1:]) >= len(runs) - 1.5, server.answered_at
    assert server.rate_limited == 0
    assert sum(bool(_throttled(client, run_id)) for run_id in runs.values()) >= len(runs) - 1


def test_an_unexpected_429_holds_every_worker_off_until_its_retry_after_and_the_run_ends_ok(
    traffic: Traffic, client: Client
) -> None:
    server = traffic.servers["burst"]
    server.default = text("fine")
    tag = uuid.uuid4().hex[:6]
    server.rate_limit_next(1, retry_after=2)
    first = _post(client, f"agent:burst:cron:{tag}-first", "first")
    wait_for(lambda: server.rate_limited == 1, 30, what="the provider's 429")
    refused_at = server.rate_limited_at[0]
    others = _post_all(client, {f"agent:burst:cron:{tag}-{i}": f"b-{i}" for i in range(8)})

    ended = _ended(client, [first, *others.values()], timeout=60)

    assert [run.status for run in ended] == ["ok"] * len(ended)
    assert ended[0].reply == "fine"
    assert server.rate_limited == 1
    # Nothing reached the provider until the cooldown ended, whichever worker asked.
    after = server.arrived[1:]
    assert len(after) == len(ended)
    assert min(after) - refused_at >= 2.0 - 0.05, [round(t - refused_at, 3) for t in after]
    # The run that got the 429 waited out the cooldown and asked again; so did runs on either worker.
    assert [e["reason"] for e in _throttled(client, first)] == ["cooldown"]
    held = [run_id for run_id in others.values() if _throttled(client, run_id)]
    assert held, "no run asked during the cooldown"
    assert all(e["reason"] == "cooldown" for run_id in held for e in _throttled(client, run_id))
    state = traffic.redis().hgetall(_traffic_keys("burst/gpt")[8])
    assert state["rateLimited"] == "1"
    assert state["cooldowns"] == "1"


def _requester(client: Client) -> str:
    """A session of ``main`` (the built-in echo model) that spawns: its tree is its own."""
    key = f"agent:main:webchat:direct:{uuid.uuid4().hex[:8]}"
    sent = client.post_message(key, "hello", timeout_seconds=20)
    assert isinstance(sent, SendResult)
    assert sent.status == "ok", sent
    return key


def _spawn(client: Client, caller: str, task: str, agent_id: str) -> SpawnResult:
    result = SpawnResult.model_validate(
        client.invoke("sessions_spawn", {"task": task, "agentId": agent_id}, caller=caller)
    )
    assert result.status == "accepted"
    return result


def test_a_chat_is_admitted_ahead_of_a_waiting_sub_agent_fan_out(traffic: Traffic, client: Client) -> None:
    server = traffic.servers["prio"]
    slow = True

    def answer(body: dict[str, Any]) -> Reply:
        if "chat-now" in user_texts(body):
            return paced("hello, person", 0.3)
        return paced("background work", 2.5) if slow else text("background work")

    server.default = answer
    caller = _requester(client)
    children = [_spawn(client, caller, f"bg-{i}", "fan") for i in range(6)]
    queue = _traffic_keys("prio/gpt")[4]
    store = traffic.redis()
    # One sub-agent's call is at the provider, the others wait for the one place.
    wait_for(lambda: store.zcard(queue) >= 4, 30, what="the sub-agents waiting for the model")

    chat = _post(client, "agent:talker:main", "chat-now")
    # The chat's call waits too: the one place is taken.
    wait_for(lambda: _throttled(client, chat), 30, what="the chat's call waiting")
    seen, waiting = len(server.requests), store.zcard(queue)
    answered = client.wait_run(chat, timeout=30)

    assert answered is not None
    assert answered.status == "ok"
    assert answered.reply == "hello, person"
    assert CLASS_OF_KIND[client.get_run(chat).kind] == CLASSES.index("people")
    [index] = _asked(server, "chat-now")
    # From the moment it waited, the chat's call was the next to reach the provider: ahead of every
    # sub-agent that had waited longer.
    assert waiting >= 4, waiting
    assert index <= seen, (index, seen)
    # Sub-agents that had waited longer went on after it.
    wait_for(lambda: len(server.requests) > index + 1, 15, what="a sub-agent's call after the chat's")
    [throttled] = _throttled(client, chat)
    assert throttled["class"] == "people"
    assert throttled["reason"] == "concurrent"
    assert int(throttled["position"]) == 0
    assert all(e["class"] == "background" for c in children for e in _throttled(client, c.run_id))

    slow = False  # the backlog drains at once: nothing of it is left to the next tests
    runs = _ended(client, [c.run_id for c in children], timeout=60)
    assert [run.status for run in runs] == ["ok"] * len(children)
    assert server.max_in_flight == 1


def test_an_agent_stops_at_its_daily_token_budget(traffic: Traffic, client: Client) -> None:
    server = traffic.servers["budget"]
    # 500 tokens a call; each reserves its prompt's estimate and its 1000-token cap until it settles.
    server.default = text("thrifty answer", usage=(400, 100))
    tag = uuid.uuid4().hex[:6]
    runs = []
    for i in range(4):  # one after another: what each spent is settled before the next asks
        run_id = _post(client, f"agent:thrifty:cron:{tag}-{i}", f"t-{i}")
        run = client.wait_run(run_id, timeout=30)
        assert run is not None
        runs.append(run)

    assert [run.status for run in runs] == ["ok", "ok", "error", "error"]
    refused = f"budget exceeded: dailyTokens (1000 of {BUDGET_TOKENS} tokens)"
    assert [run.error for run in runs[2:]] == [refused, refused]
    # The refused calls were never made.
    assert len(server.requests) == 2
    day = time.strftime("%Y-%m-%d", time.gmtime())
    spent = traffic.redis().hgetall(RedisKeys().budget_spent("thrifty", day))
    assert int(spent["tokens"]) == 1000 <= BUDGET_TOKENS


def test_a_sub_agent_tree_stops_at_its_cost_limit(traffic: Traffic, client: Client) -> None:
    server = traffic.servers["priced"]
    # A sub-agent that never stops calling tools: 500 tokens (0.005 USD) a call, each reserving ~0.011.
    server.default = tool("agents_list", usage=(400, 100))
    caller = _requester(client)
    child = _spawn(client, caller, "spend", "spender")

    run = client.wait_run(child.run_id, timeout=30)

    assert run is not None
    assert run.status == "error"
    assert run.error == f"budget exceeded: maxTreeCostUsd (0.0100 of {TREE_USD:.4f} USD)"
    # Two calls were made; the third would have passed the tree's limit, counting its worst case.
    assert len(server.requests) == 2
    tree = traffic.redis().hgetall(RedisKeys().tree_spent(caller))
    assert int(tree["usdMicros"]) <= TREE_USD * 1_000_000


def _holder(traffic: Traffic, run_id: str) -> Role:
    """The worker that received ``run_id``'s task (Celery logs each task it receives, by its id)."""

    def found() -> Role | None:
        return next((w for w in traffic.workers if f"clawbus.run[{run_id}] received" in w.output()), None)

    holder = wait_for(found, 10, what=f"the worker running {run_id}")
    assert holder is not None
    return holder


def test_a_worker_killed_mid_call_gives_its_place_back_when_the_hold_lapses(
    traffic: Traffic, client: Client
) -> None:
    server = traffic.servers["crash"]
    # The first call streams for longer than the test; every later one answers at once.
    server.script("gpt", paced("a very slow answer " * 20, 60))
    server.default = text("after the crash")
    tag = uuid.uuid4().hex[:6]
    doomed = _post(client, f"agent:crash:cron:{tag}-doomed", "doomed")
    wait_for(lambda: server.in_flight == 1, 30, what="the slow call at the provider")
    admitted = server.arrived[0]
    holder = _holder(traffic, doomed)
    holder.kill()
    traffic.workers.remove(holder)
    inflight = _traffic_keys("crash/gpt")[2]
    store = traffic.redis()
    assert store.zcard(inflight) == 1  # its place is still held: nothing said the call ended

    later = _post(client, f"agent:crash:cron:{tag}-later", "later")
    run = client.wait_run(later, timeout=60)

    assert run is not None
    assert run.status == "ok", run.error
    assert run.reply == "after the crash"
    [index] = _asked(server, "later")
    # Held until the lapse, then given back: the later run was admitted, not refused or failed.
    lapse = CRASH_TIMEOUT_SECONDS + HOLD_MARGIN_SECONDS
    assert server.arrived[index] - admitted >= lapse - 1.0
    assert server.max_in_flight == 1
    state = store.hgetall(_traffic_keys("crash/gpt")[8])
    assert state["holdsLapsed"] == "1"
    assert [e["reason"] for e in _throttled(client, later)] == ["concurrent"]
