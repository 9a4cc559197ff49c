"""api/metrics.py: GET /metrics reads each model's traffic and each agent's spend today from Redis at
scrape time: the admission wait histogram, throttled calls, 429s, cooldown seconds, tokens, spend."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from api.metrics import wait_buckets
from shared.store import Store
from shared.traffic import CallLimits
from tests.unit.api.test_budgets import spend

MODEL = "fake/fast"


def samples(http: TestClient) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    answer = http.get("/metrics")
    assert answer.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found[(name, frozenset(labels.items()))]


def admit(store: Store, waiter: str) -> str | None:
    """A sub-agent's call (the background class) of a model that takes one call at a time."""
    limits = CallLimits(concurrent=1)
    answer = store.traffic.admit(
        MODEL,
        waiter,
        klass=2,
        flow="main|main",
        weight=1,
        limits=limits,
        tokens=10,
        hold_ms=60_000,
        grace_ms=5_000,
    )
    return answer.ticket


def test_wait_buckets_become_cumulative_seconds_with_inf_last() -> None:
    buckets = wait_buckets({"10": 2, "250": 1, "60000": 1, "+Inf": 3})
    assert buckets[0] == ("0.01", 2)
    assert dict(buckets)["0.1"] == 2
    assert dict(buckets)["0.25"] == 3
    assert dict(buckets)["60"] == 4
    assert buckets[-1] == ("+Inf", 7)
    assert [le for le, _ in buckets][-3:] == ["30", "60", "+Inf"]


def test_no_admissions_are_empty_buckets() -> None:
    assert {count for _, count in wait_buckets({})} == {0}


def test_model_traffic_is_scraped_by_model_and_class(http: TestClient, api_store: Store) -> None:
    traffic = api_store.traffic
    first = admit(api_store, "run-1")
    assert first is not None
    assert admit(api_store, "run-2") is None  # one at a time: it waits
    traffic.settle(
        MODEL, first, tokens_used=30, rate_limited=True, cooldown_ms=2_000, tokens_in=20, tokens_out=10
    )
    found = samples(http)
    assert (
        value(found, "clawbus_model_admission_wait_seconds_count", model=MODEL, **{"class": "background"})
        == 1
    )
    assert (
        value(
            found,
            "clawbus_model_admission_wait_seconds_bucket",
            model=MODEL,
            le="0.01",
            **{"class": "background"},
        )
        == 1
    )
    assert value(found, "clawbus_model_admission_wait_seconds_count", model=MODEL, **{"class": "people"}) == 0
    assert value(found, "clawbus_model_calls_throttled_total", model=MODEL, **{"class": "background"}) == 0
    assert value(found, "clawbus_model_rate_limited_total", model=MODEL) == 1
    assert value(found, "clawbus_model_cooldown_seconds_total", model=MODEL) == 2.0
    assert value(found, "clawbus_model_tokens_total", model=MODEL, direction="in") == 20
    assert value(found, "clawbus_model_tokens_total", model=MODEL, direction="out") == 10


def test_a_call_admitted_after_waiting_counts_as_throttled_and_its_wait_is_summed(
    http: TestClient, api_store: Store
) -> None:
    state = api_store.keys.traffic(MODEL)[-1]
    api_store.redis.sadd(api_store.keys.traffic_models(), MODEL)
    api_store.redis.hset(
        state,
        mapping={"admitted|0": 2, "throttled|0": 1, "waitedMs|0": 1500, "wait|0|10": 1, "wait|0|2500": 1},
    )
    found = samples(http)
    people = {"class": "people"}
    assert value(found, "clawbus_model_calls_throttled_total", model=MODEL, **people) == 1
    assert value(found, "clawbus_model_admission_wait_seconds_sum", model=MODEL, **people) == 1.5
    assert value(found, "clawbus_model_admission_wait_seconds_bucket", model=MODEL, le="1", **people) == 1
    assert value(found, "clawbus_model_admission_wait_seconds_bucket", model=MODEL, le="2.5", **people) == 2


def test_each_agents_spend_today_is_scraped(http: TestClient, api_store: Store) -> None:
    spend(api_store, "main", 1_250_000, 900)
    found = samples(http)
    assert value(found, "clawbus_agent_spend_usd", agent="main") == 1.25
    assert value(found, "clawbus_agent_spend_tokens", agent="main") == 900
    assert value(found, "clawbus_agent_spend_usd", agent="research") == 0
