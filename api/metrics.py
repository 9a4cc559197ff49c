"""Prometheus figures for ``GET /metrics``.

Counts of the whole fleet (runs created and finished, deliveries), queue depths, live workers and busy
lanes are read from Redis at scrape time, so any API process reports the same totals and a restart loses
nothing; so are each model's traffic (admission waits, throttled calls, 429s, cooldowns, tokens) and each
agent's spend today. What only this process knows (its active waits, how long its waits took) is its own. The
workers' own task figures come from Flower's ``/metrics``.

What this process observes itself carries, when a span is current (telemetry.tracing on), an exemplar with
that span's trace id (``shared.base.trace_context.exemplar``); exemplars show in the OpenMetrics exposition
only, which ``GET /metrics`` answers to a scraper that asks for it (api/routes/metrics.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from clawbus.api.services import Services
from clawbus.shared.domain.budgets import Spend, day_of, usd
from clawbus.shared.domain.traffic import CLASSES, WAIT_BUCKETS_MS, ModelTraffic
from clawbus.workers import queues


class FleetCollector(Collector):
    def __init__(self, services: Services) -> None:
        self._services = services

    def collect(self) -> Iterator[Metric]:
        figures = self._services.store.fleet.figures(queues.ALL)
        created = CounterMetricFamily("clawbus_runs_created", "Runs accepted, by kind.", labels=["kind"])
        for kind, count in sorted(figures.runs_created.items()):
            created.add_metric([kind], count)
        finished = CounterMetricFamily(
            "clawbus_runs_finished", "Runs ended, by kind and status.", labels=["kind", "status"]
        )
        for (kind, status), count in sorted(figures.runs_finished.items()):
            finished.add_metric([kind, status], count)
        deliveries = CounterMetricFamily(
            "clawbus_deliveries", "Announce deliveries by final state.", labels=["status"]
        )
        for status, count in sorted(figures.deliveries.items()):
            deliveries.add_metric([status], count)
        ended = CounterMetricFamily(
            "clawbus_flows_ended",
            "Send and spawn flows that ended: completed, or what cut them short.",
            labels=["reason"],
        )
        for reason, count in sorted(figures.flows_ended.items()):
            ended.add_metric([reason], count)
        dropped = CounterMetricFamily(
            "clawbus_messages_dropped",
            "Chat messages a full session queue dropped (messages.queue.cap), by drop policy.",
            labels=["policy"],
        )
        for policy, count in sorted(figures.messages_dropped.items()):
            dropped.add_metric([policy], count)
        depth = GaugeMetricFamily("clawbus_queue_depth", "Messages waiting in a queue.", labels=["queue"])
        for queue, count in figures.queue_depths.items():
            depth.add_metric([queue], count)
        yield from (created, finished, deliveries, ended, dropped, depth)
        yield GaugeMetricFamily(
            "clawbus_workers_alive", "Workers with a live heartbeat.", len(figures.workers)
        )
        yield GaugeMetricFamily(
            "clawbus_busy_lanes", "Sessions with a run queued or running.", figures.busy_lanes
        )
        yield GaugeMetricFamily(
            "clawbus_flows_in_progress", "Send and spawn flows not yet done.", figures.flows_in_progress
        )
        if figures.reaper_ran_at is not None:
            yield GaugeMetricFamily(
                "clawbus_reaper_last_run_timestamp_seconds",
                "When the reaper last ran (beat and a worker both alive).",
                figures.reaper_ran_at / 1000,
            )
        yield CounterMetricFamily(
            "clawbus_cold_moves_failed",
            "Moves of older transcript messages the cold store refused (they stayed in Redis).",
            figures.cold_moves_failed,
        )
        if figures.cold_move_failure is not None:
            yield GaugeMetricFamily(
                "clawbus_cold_move_last_failure_timestamp_seconds",
                "When the cold store last refused a move, while no move has succeeded since.",
                figures.cold_move_failure.at / 1000,
            )
        yield GaugeMetricFamily(
            "clawbus_runs_stalled",
            "Runs whose lease is renewed but with no progress for runs.stallSeconds (reported, not stopped).",
            figures.runs_stalled,
        )
        yield CounterMetricFamily(
            "clawbus_run_stalls",
            "Runs the reaper's watchdog found stalled (each stall once).",
            figures.run_stalls,
        )
        waiter = self._services.waiter
        yield GaugeMetricFamily("clawbus_active_waits", "Waits this API process holds open.", waiter.active)
        yield from waiter.wait_seconds.collect()
        traffic = self._services.store.traffic
        yield from traffic_metrics(traffic.snapshot(traffic.models()))
        agents = self._services.config.agent_ids()
        day = day_of(self._services.store.clock.now_ms())
        yield from spend_metrics(self._services.store.budgets.spent(agents, day))


def traffic_metrics(figures: list[ModelTraffic]) -> Iterator[Metric]:
    """Each model's admission counters since the deployment began."""
    waits = HistogramMetricFamily(
        "clawbus_model_admission_wait_seconds",
        "How long model calls waited for their model's capacity, by model and class.",
        labels=["model", "class"],
    )
    throttled = CounterMetricFamily(
        "clawbus_model_calls_throttled", "Model calls that waited for capacity.", labels=["model", "class"]
    )
    limited = CounterMetricFamily(
        "clawbus_model_rate_limited", "Provider 429 answers to model calls.", labels=["model"]
    )
    cooldown = CounterMetricFamily(
        "clawbus_model_cooldown_seconds", "Seconds models were cooling down after a 429.", labels=["model"]
    )
    tokens = CounterMetricFamily(
        "clawbus_model_tokens", "Tokens of model calls, in (prompt) and out.", labels=["model", "direction"]
    )
    for figure in figures:
        for klass in CLASSES:
            buckets = wait_buckets(figure.wait_buckets.get(klass, {}))
            waits.add_metric([figure.model, klass], buckets, sum_value=figure.waited_ms.get(klass, 0) / 1000)
            throttled.add_metric([figure.model, klass], figure.throttled.get(klass, 0))
        limited.add_metric([figure.model], figure.rate_limited)
        cooldown.add_metric([figure.model], figure.cooldown_ms_total / 1000)
        tokens.add_metric([figure.model, "in"], figure.tokens_in)
        tokens.add_metric([figure.model, "out"], figure.tokens_out)
    yield from (waits, throttled, limited, cooldown, tokens)


def wait_buckets(counts: dict[str, int]) -> list[tuple[str, float]]:
    """The admission script's counts per bound (ms, not cumulative) as Prometheus buckets: cumulative, the
    bound in seconds, ``+Inf`` last."""
    buckets: list[tuple[str, float]] = []
    total = 0
    for bound in WAIT_BUCKETS_MS:
        total += counts.get(str(bound), 0)
        buckets.append((f"{bound / 1000:g}", total))
    buckets.append(("+Inf", total + counts.get("+Inf", 0)))
    return buckets


def spend_metrics(spent: dict[str, Spend]) -> Iterator[Metric]:
    """What each agent spent on model calls today (UTC), reservations of calls under way included."""
    dollars = GaugeMetricFamily(
        "clawbus_agent_spend_usd", "Agents' model spend today (UTC).", labels=["agent"]
    )
    tokens = GaugeMetricFamily(
        "clawbus_agent_spend_tokens", "Agents' model tokens today (UTC).", labels=["agent"]
    )
    for agent, spend in sorted(spent.items()):
        dollars.add_metric([agent], usd(spend.usd_micros))
        tokens.add_metric([agent], spend.tokens)
    yield from (dollars, tokens)


def registry_for(services: Services) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(services))
    return registry
