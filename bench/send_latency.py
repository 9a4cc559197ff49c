"""Figure 1: ``sessions_send`` with a wait, sequential, against a bare Celery ``delay().get()`` round trip.

Both sides run one worker process with a prefork pool of one. Each send targets a fresh cron session so
every call does the same work. A send's reply comes before its announce step and delivery; those are let
finish (untimed) before the next call, so each call meets an idle worker like each bare round trip does.
Figure 4 times the whole exchange.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from api.client import Client
from bench import bare_celery
from bench.report import Row, Section, Target
from bench.stack import Stack, bare_workers, clawbus_workers
from bench.stats import Latency, timed_calls
from shared.models import SendResult

TARGET = Target("<=", 2.0)
WAIT_S = 10


def clawbus_latency(stack: Stack, count: int, warmup: int) -> Latency:
    seconds: list[float] = []
    with clawbus_workers(stack, 1), stack.client() as client:
        for i in range(warmup + count):
            started = time.perf_counter()
            result = client.sessions_send(f"agent:main:cron:bench-send-{i}", "ping", timeout_seconds=WAIT_S)
            took = time.perf_counter() - started
            if not isinstance(result, SendResult) or result.status != "ok" or result.flow_id is None:
                raise RuntimeError(f"sessions_send {i} did not succeed: {result}")
            _settle(client, result.flow_id)
            if i >= warmup:
                seconds.append(took)
    return Latency.of(seconds)


def _settle(client: Client, flow_id: str) -> None:
    """Untimed: the send's announce and delivery run after its reply; the next call starts on an idle
    worker, as every bare round trip does."""
    deadline = time.monotonic() + WAIT_S
    while client.get_flow(flow_id).status != "done":
        if time.monotonic() > deadline:
            raise RuntimeError(f"flow {flow_id} did not end in {WAIT_S}s")
        time.sleep(0.005)


def bare_latency(stack: Stack, count: int, warmup: int, events: bool = False) -> Latency:
    with bare_workers(stack, 1, events) as app:
        noop = app.tasks[bare_celery.NOOP_TASK]

        def round_trip(_: int) -> None:
            noop.delay().get(timeout=WAIT_S)

        return timed_calls(round_trip, count, warmup)


def run(stack: Stack, count: int, warmup: int) -> Section:
    clawbus = clawbus_latency(stack, count, warmup)
    bare = bare_latency(stack, count, warmup)
    bare_events = bare_latency(stack, count, warmup, events=True)
    return Section(
        title=f"1. sessions_send with a wait: 1 worker x concurrency 1, N={count} after {warmup} warm-up",
        measured_label="clawbus (HTTP API)",
        baseline_label="bare Celery noop .delay().get()",
        rows=[
            Row("p50 latency", "ms", clawbus.p50_ms, bare.p50_ms, TARGET),
            Row("p95 latency", "ms", clawbus.p95_ms, bare.p95_ms),
            Row("mean latency", "ms", clawbus.mean_ms, bare.mean_ms),
            Row("p50 vs bare Celery with events on", "ms", clawbus.p50_ms, bare_events.p50_ms),
        ],
        details={"clawbus": asdict(clawbus), "bare": asdict(bare), "bare_with_events": asdict(bare_events)},
    )
