"""Prometheus figures for ``GET /metrics``.

Counts of the whole fleet (runs created and finished, deliveries), queue depths, live workers and busy
lanes are read from Redis at scrape time, so any API process reports the same totals and a restart loses
nothing. What only this process knows (its active waits, how long its waits took) is its own. The
workers' own task figures come from Flower's ``/metrics``.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from api.services import Services
from workers import queues


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
        waiter = self._services.waiter
        yield GaugeMetricFamily("clawbus_active_waits", "Waits this API process holds open.", waiter.active)
        yield from waiter.wait_seconds.collect()


def registry_for(services: Services) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FleetCollector(services))
    return registry
