"""Figure 5: sessions_spawn, from the call to the report delivered (echo child), against 3 sequential bare
Celery round trips (the child run, the requester's turn on its report, the delivery); and 200 spawns at
once on 2 workers, from as many sessions as ``subagents.maxChildrenPerAgent`` needs (a session has at most
that many children not ended: 40 sessions at the default 5), each report delivered exactly once.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from clawbus_client import Client
from clawbus_client.models import Flow, SpawnResult

from bench import bare_celery
from bench.report import Row, Section, Target
from bench.stack import Stack, bare_workers, clawbus_workers
from bench.stats import Latency, timed_calls

HOPS = 3
TARGET = Target("<=", 2.0)
TIMEOUT_S = 120.0


def _requester(client: Client) -> tuple[str, str]:
    peer = f"spawner-{uuid.uuid4().hex[:8]}"
    key = f"agent:main:webchat:direct:{peer}"
    client.post_message(key, "hello", channel="webchat", to=peer, timeout_seconds=10)
    return key, peer


def _spawn(client: Client, caller: str, task: str) -> str:
    spawned = client.sessions_spawn(task, caller=caller)
    if not isinstance(spawned, SpawnResult):
        raise RuntimeError(f"spawn from {caller} refused: {spawned.error}")
    return spawned.run_id


def _finished(client: Client, flow_id: str, deadline: float) -> Flow:
    while True:
        flow = client.get_flow(flow_id)
        if flow.status == "done":
            return flow
        if time.monotonic() > deadline:
            raise RuntimeError(f"spawn {flow_id} did not finish in {TIMEOUT_S:g}s")
        time.sleep(0.02)


def clawbus_latency(stack: Stack, count: int, warmup: int) -> Latency:
    seconds: list[float] = []
    with clawbus_workers(stack, 1), stack.client() as client:
        caller, _peer = _requester(client)
        for i in range(warmup + count):
            started_ms = time.time() * 1000
            flow = _finished(client, _spawn(client, caller, f"task {i}"), time.monotonic() + TIMEOUT_S)
            if flow.delivery is None or flow.delivery.delivered_at is None:
                raise RuntimeError(f"spawn {i} ended without a delivery: {flow.wire()}")
            if i >= warmup:
                seconds.append((flow.delivery.delivered_at - started_ms) / 1000)
    return Latency.of(seconds)


def bare_sequence(stack: Stack, count: int, warmup: int) -> Latency:
    with bare_workers(stack, 1) as app:
        noop = app.tasks[bare_celery.NOOP_TASK]

        def three(_: int) -> None:
            for _hop in range(HOPS):
                noop.delay().get(timeout=10)

        return Latency.of(timed_calls(three, count, warmup))


def burst(stack: Stack, spawns: int) -> tuple[float, int, int, int]:
    """``spawns`` at once on 2 workers, spread over the fewest sessions whose children stay within
    ``maxChildrenPerAgent``: (seconds until the last delivery, deliveries, distinct flows delivered,
    sessions)."""
    per_session = stack.config.agents.defaults.subagents.max_children_per_agent
    with clawbus_workers(stack, 2), stack.client() as client:
        requesters = [_requester(client) for _ in range(-(-spawns // per_session))]
        started = time.monotonic()

        def one(i: int) -> str:
            with stack.client() as own:
                return _spawn(own, requesters[i % len(requesters)][0], f"burst {i}")

        with ThreadPoolExecutor(max_workers=16) as pool:
            flow_ids = list(pool.map(one, range(spawns)))
        deadline = time.monotonic() + TIMEOUT_S
        for flow_id in flow_ids:
            _finished(client, flow_id, deadline)
        took = time.monotonic() - started
        delivered = [m for _, peer in requesters for m in _delivered(client, peer)]
        return took, len(delivered), len({m["flowId"] for m in delivered} & set(flow_ids)), len(requesters)


def _delivered(client: Client, peer: str) -> list[dict[str, Any]]:
    """Every message delivered to the webchat ``peer``, page after page (a page is 100)."""
    delivered = client.channel_messages("webchat", peer)
    while len(delivered) % 100 == 0 and delivered:
        more = client.channel_messages("webchat", peer, after=delivered[-1]["id"])
        if not more:
            break
        delivered += more
    return delivered


def run(stack: Stack, count: int, warmup: int, spawns: int) -> Section:
    clawbus = clawbus_latency(stack, count, warmup)
    bare = bare_sequence(stack, count, warmup)
    took, delivered, distinct, sessions = burst(stack, spawns)
    exactly_once = delivered == distinct == spawns
    return Section(
        title=f"5. sessions_spawn -> report delivered (echo child), 1 worker, N={count}; {spawns} at once",
        measured_label="clawbus spawn -> delivered",
        baseline_label=f"{HOPS} sequential bare Celery round trips",
        rows=[
            Row("p50 wall time", "ms", clawbus.p50_ms, bare.p50_ms, TARGET),
            Row("p95 wall time", "ms", clawbus.p95_ms, bare.p95_ms),
        ],
        notes=[
            f"{spawns} spawns at once from {sessions} sessions, 2 workers: all done in {took:.2f}s; "
            f"{delivered} reports delivered for {distinct} distinct flows "
            f"({'exactly once each' if exactly_once else 'NOT exactly once'})"
        ],
        details={
            "clawbus": asdict(clawbus),
            "bare": asdict(bare),
            "burst": {
                "spawns": spawns,
                "sessions": sessions,
                "seconds": took,
                "delivered": delivered,
                "distinct": distinct,
            },
        },
    )
