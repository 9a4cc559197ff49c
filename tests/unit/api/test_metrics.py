"""api/metrics.py: GET /metrics reads each model's traffic and each agent's spend today from Redis at
scrape time: the admission wait histogram, throttled calls, 429s, cooldown seconds, tokens, spend; a
scraper that asks for OpenMetrics gets it, with the trace ids of the process's own observations as exemplars."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.openmetrics.parser import text_string_to_metric_families as text_string_to_openmetrics
from prometheus_client.parser import text_string_to_metric_families

from clawbus.api.metrics import wait_buckets
from clawbus.shared.base.trace_context import exemplar as trace_exemplar
from clawbus.shared.config import Config
from clawbus.shared.domain.traffic import CallLimits
from clawbus.shared.store import Store
from tests.support.budgets import spend
from tests.support.cold import refused_move
from tests.support.runs import stalled

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


def test_metrics_answer_open_metrics_with_exemplars_to_a_scraper_that_asks_for_it(http: TestClient) -> None:
    """A wait observed inside a span (an SDK tracer provider of the test's own): its trace id shows as an
    exemplar in the OpenMetrics exposition; the plain text format, the default, has no exemplars."""
    waits = http.app.state.services.waiter.wait_seconds  # type: ignore[attr-defined]
    with TracerProvider().get_tracer("test").start_as_current_span("wait") as span:
        waits.labels("ended").observe(0.3, exemplar=trace_exemplar())
    trace_id = format(span.get_span_context().trace_id, "032x")

    answer = http.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
    assert answer.text.endswith("# EOF\n")
    exemplar = next(line for line in answer.text.splitlines() if f'trace_id="{trace_id}"' in line)
    assert exemplar.startswith('clawbus_wait_seconds_bucket{le="0.5",outcome="ended"} 1.0 # ')
    families = {family.name: family for family in text_string_to_openmetrics(answer.text)}
    assert "clawbus_runs_created" in families
    assert "clawbus_wait_seconds" in families

    plain = http.get("/metrics")
    assert plain.headers["content-type"] == CONTENT_TYPE_LATEST
    assert "trace_id" not in plain.text
    assert 'clawbus_wait_seconds_bucket{le="0.5",outcome="ended"} 1.0' in plain.text


def test_no_span_no_exemplar() -> None:
    assert trace_exemplar() is None


def test_cold_moves_the_store_refused_are_counted_with_when_the_last_was(
    http: TestClient, api_store: Store, tmp_path: Path
) -> None:
    found = samples(http)
    assert value(found, "clawbus_cold_moves_failed_total") == 0
    assert ("clawbus_cold_move_last_failure_timestamp_seconds", frozenset()) not in found
    refused_move(api_store, tmp_path)
    failure = api_store.fleet.figures([]).cold_move_failure
    assert failure is not None
    found = samples(http)
    assert value(found, "clawbus_cold_moves_failed_total") == 1
    assert value(found, "clawbus_cold_move_last_failure_timestamp_seconds") == failure.at / 1000


def test_stalled_runs_are_a_gauge_and_each_stall_is_counted(
    http: TestClient, api_store: Store, api_config: Config
) -> None:
    found = samples(http)
    assert value(found, "clawbus_runs_stalled") == 0
    assert value(found, "clawbus_run_stalls_total") == 0
    stalled(api_store, api_config)
    found = samples(http)
    assert value(found, "clawbus_runs_stalled") == 1
    assert value(found, "clawbus_run_stalls_total") == 1
