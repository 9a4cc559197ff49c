"""shared/runner/model_gate.py: a run's model calls pass its budgets and its model's limits, against the fake
provider over HTTP and a fakeredis store."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from clawbus.shared.adapters.runtimes.openai import ModelRequestFailed, OpenAIRuntime
from clawbus.shared.adapters.runtimes.registry import runtime_for
from clawbus.shared.config import Config
from clawbus.shared.domain import budgets
from clawbus.shared.domain.budgets import BudgetExceeded, Override
from clawbus.shared.domain.traffic import CallLimits
from clawbus.shared.ports.runtime import StepRequest
from clawbus.shared.runner.model_gate import (
    AwaitingCapacity,
    ModelGate,
    NoCapacity,
    duration_ms,
    learn,
    root_of,
)
from clawbus.shared.store import Store
from clawbus.shared.wire.models import Message, Run, RunStatus, SessionEntry
from tests.conftest import WorldFactory
from tests.support.fake_openai import FakeOpenAI, failure, fake_openai, text

MODEL = "fake/m"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with fake_openai() as fake:
        yield fake


@pytest.fixture(autouse=True)
def empty_queue(server: FakeOpenAI) -> None:
    server.queues.clear()


def world_with(world: WorldFactory, server: FakeOpenAI, **extra: Any) -> tuple[Config, Store]:
    model: dict[str, Any] = {"id": "m", "cost": {"input": 1.0, "output": 2.0}, "maxTokens": 50}
    model.update(extra.pop("model", {}))
    provider = {
        "type": "openai",
        "baseUrl": server.url,
        "stream": False,
        "models": [model],
        **extra.pop("provider", {}),
    }
    w = world({"models": {"providers": {"fake": provider}, **extra.pop("models", {})}}, extra or None)
    return w.config, w.store


def run(kind: str = "chat", session_key: str = "agent:main:main") -> Run:
    return Run(
        run_id=f"run-{kind}",
        session_key=session_key,
        agent_id="main",
        kind=kind,  # type: ignore[arg-type]
        status=RunStatus.RUNNING,
        seq=1,
        created_at=1,
    )


def step(config: Config, store: Store, gate: ModelGate, message: str = "hi") -> str:
    runtime = runtime_for(config, MODEL)
    assert isinstance(runtime, OpenAIRuntime)
    request = StepRequest(
        agent_id="main",
        model=MODEL,
        session=None,
        messages=[Message.of("user", message, timestamp=1)],
        gate=gate,
    )
    reply = runtime.step(request).reply
    gate.flush()  # as the agent loop settles a step's call when the step is over
    return reply


def gate_of(config: Config, store: Store, the_run: Run | None = None, **extra: Any) -> ModelGate:
    return ModelGate(
        store, config, the_run or run(), MODEL, root=None, cancel=None, time_left=lambda: None, **extra
    )


def test_a_call_is_counted_against_its_model_and_its_agents_day(
    world: WorldFactory, server: FakeOpenAI
) -> None:
    config, store = world_with(world, server)
    server.script("m", text("hello", usage=(100, 20)))
    assert step(config, store, gate_of(config, store)) == "hello"
    [figures] = store.traffic.snapshot([MODEL])
    assert (figures.tokens_in, figures.tokens_out, figures.in_flight) == (100, 20, 0)
    day = budgets.day_of(store.clock.now_ms())
    spent = store.budgets.spent(["main"], day)["main"]
    assert spent.tokens == 120
    assert spent.usd_micros == budgets.micros((100 * 1.0 + 20 * 2.0) / 1_000_000)


def test_the_output_cap_the_reservation_assumed_is_asked_for_under_a_budget(
    world: WorldFactory, server: FakeOpenAI
) -> None:
    config, store = world_with(
        world, server, model={"maxTokens": None}, agents={"defaults": {"budget": {"dailyUsd": 5}}}
    )
    server.script("m", text("capped"), text("free"))
    step(config, store, gate_of(config, store))
    assert server.bodies("m")[-1]["max_tokens"] == 4096
    unbounded, store = world_with(world, server, model={"maxTokens": None})
    step(unbounded, store, gate_of(unbounded, store))
    assert "max_tokens" not in server.bodies("m")[-1]


def test_an_answered_call_is_settled_when_its_step_is_over_and_a_failed_one_at_once(
    world: WorldFactory, server: FakeOpenAI
) -> None:
    config, store = world_with(world, server, provider={"maxRetries": 0})
    gate = gate_of(config, store)
    server.script("m", text("hello", usage=(100, 20)))
    runtime = runtime_for(config, MODEL)
    request = StepRequest(
        agent_id="main",
        model=MODEL,
        session=None,
        messages=[Message.of("user", "hi", timestamp=1)],
        gate=gate,
    )
    runtime.step(request)
    assert store.traffic.snapshot([MODEL])[0].in_flight == 1  # its settling waits for the step's end
    closing = gate.take_close()
    assert closing is not None
    assert (closing.end.tokens_used, closing.charge.tokens) == (120, 120)
    store.calls.close(closing)
    assert gate.take_close() is None
    server.script("m", failure(500, "down"))
    with pytest.raises(ModelRequestFailed):
        runtime.step(request)
    [figures] = store.traffic.snapshot([MODEL])
    assert (figures.in_flight, figures.requests_in_window) == (0, 2)
    assert gate.take_close() is None


def test_a_call_that_would_pass_the_days_tokens_is_not_made(world: WorldFactory, server: FakeOpenAI) -> None:
    config, store = world_with(world, server, agents={"defaults": {"budget": {"dailyTokens": 40}}})
    calls = len(server.bodies("m"))
    with pytest.raises(BudgetExceeded) as refused:
        step(config, store, gate_of(config, store))
    assert str(refused.value) == "budget exceeded: dailyTokens (0 of 40 tokens)"
    assert len(server.bodies("m")) == calls


def test_a_runtime_budget_stands_over_the_configuration(world: WorldFactory, server: FakeOpenAI) -> None:
    config, store = world_with(world, server, agents={"defaults": {"budget": {"dailyUsd": 0.000001}}})
    store.budgets.set_override("main", Override(daily_usd_micros=budgets.UNLIMITED))
    server.script("m", text("allowed"))
    assert step(config, store, gate_of(config, store)) == "allowed"


def test_a_day_spent_to_its_limit_refuses_the_next_call_with_what_was_spent(
    world: WorldFactory, server: FakeOpenAI
) -> None:
    config, store = world_with(world, server, agents={"defaults": {"budget": {"dailyUsd": 0.0002}}})
    server.script("m", text("one", usage=(100, 20)))
    step(config, store, gate_of(config, store))
    with pytest.raises(BudgetExceeded) as refused:
        step(config, store, gate_of(config, store))
    assert str(refused.value) == "budget exceeded: dailyUsd (0.0001 of 0.0002 USD)"


def test_a_429_sets_the_cooldown_every_call_obeys_and_the_call_is_retried(
    world: WorldFactory, server: FakeOpenAI
) -> None:
    config, store = world_with(world, server)
    server.script("m", failure(429, "slow down", **{"Retry-After": "0.3"}), text("after the cooldown"))
    assert step(config, store, gate_of(config, store)) == "after the cooldown"
    [figures] = store.traffic.snapshot([MODEL])
    assert (figures.rate_limited, figures.cooldowns) == (1, 1)
    assert figures.cooldown_ms_total == 300
    events = store.runs.events("run-chat")
    assert any(event.get("type") == "throttled" and event["reason"] == "cooldown" for event in events)


def test_a_long_wait_parks_the_run_and_keeps_its_place(world: WorldFactory, server: FakeOpenAI) -> None:
    config, store = world_with(world, server, model={"limits": {"requestsPerMinute": 1}})
    server.script("m", text("first"))
    step(config, store, gate_of(config, store, run(session_key="agent:main:one")))
    waiting = run("subagent", "agent:main:subagent:x")
    with pytest.raises(AwaitingCapacity) as parked:
        step(config, store, gate_of(config, store, waiting))
    assert parked.value.reason == "requests"
    assert 55 < parked.value.wait_s <= 60
    [figures] = store.traffic.snapshot([MODEL])
    assert figures.waiting == 1
    assert store.runs.get("run-subagent") is None  # not stored: nothing to mark


def test_a_call_without_time_limit_fails_after_the_longest_wait(
    world: WorldFactory, server: FakeOpenAI
) -> None:
    config, store = world_with(
        world, server, model={"limits": {"concurrent": 1}}, models={"admission": {"maxWaitSeconds": 0.2}}
    )
    store.traffic.admit(
        MODEL,
        "holder",
        klass=0,
        flow="x",
        weight=1,
        limits=CallLimits(concurrent=1),
        tokens=1,
        hold_ms=60_000,
        grace_ms=1_000,
    )
    with pytest.raises(NoCapacity, match="maxWaitSeconds"):
        step(config, store, gate_of(config, store))
    assert store.traffic.snapshot([MODEL])[0].waiting == 0  # it left the queue


def test_reset_durations_read_as_the_provider_writes_them() -> None:
    assert duration_ms("1s") == 1000
    assert duration_ms("6m0s") == 360_000
    assert duration_ms("20ms") == 20
    assert duration_ms("1.5") == 1500
    assert duration_ms("soon") is None


def test_headers_teach_limits_only_where_none_are_configured_and_a_cooldown_when_none_remain() -> None:
    headers = {
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-limit-tokens": "90000",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "2s",
    }
    learned, cooldown = learn(headers, CallLimits(tokens_per_minute=1000))
    assert learned == CallLimits(requests_per_minute=500, tokens_per_minute=0)
    assert cooldown == 2000


def test_the_root_of_a_tree_is_the_first_session_up_its_spawners_that_nobody_spawned() -> None:
    def entry(key: str, spawned_by: str | None) -> SessionEntry:
        return SessionEntry.model_validate(
            {
                "key": key,
                "sessionId": key,
                "agentId": "main",
                "kind": "other",
                "createdAt": 1,
                "updatedAt": 1,
                "spawnedBy": spawned_by,
            }
        )

    sessions = {
        "agent:main:main": entry("agent:main:main", None),
        "agent:main:subagent:a": entry("agent:main:subagent:a", "agent:main:main"),
    }
    found = SimpleNamespace(get=sessions.get)
    leaf = entry("agent:main:subagent:b", "agent:main:subagent:a")
    assert root_of(found, leaf) == "agent:main:main"  # type: ignore[arg-type]
    orphan = entry("agent:main:subagent:c", "agent:main:gone")
    assert root_of(found, orphan) == "agent:main:gone"  # type: ignore[arg-type]
