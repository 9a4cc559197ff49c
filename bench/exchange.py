"""Figure 4: a whole agent-to-agent exchange with maxPingPongTurns = 5, from sessions_send to delivery.

The exchange is 7 runs (primary, 5 reply turns, announce) and a delivery, each waiting for the one before,
so the baseline is 7 sequential bare Celery ``delay().get()`` round trips. The end of an exchange is the
delivery's own ``deliveredAt``, recorded by the worker, so polling for it does not change the figure.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict

from clawbus_client import Client
from clawbus_client.models import SendResult

from bench import bare_celery
from bench.report import Row, Section, Target
from bench.stack import Stack, bare_workers, clawbus_workers
from bench.stats import Latency, timed_calls

TARGET = Target("<=", 2.0)
HOPS = 7
POLL_S = 0.02
TIMEOUT_S = 60.0


def one_exchange(client: Client, i: int) -> float:
    """Seconds from the send to the delivery."""
    tag = f"{uuid.uuid4().hex[:6]}-{i}"
    requester, target = f"agent:main:webchat:direct:req-{tag}", f"agent:main:webchat:direct:tgt-{tag}"
    for key, to in ((requester, f"req-{tag}"), (target, f"tgt-{tag}")):
        client.post_message(key, "hello", channel="webchat", to=to, timeout_seconds=10)
    started_ms = time.time() * 1000
    sent = client.sessions_send(target, "ping", timeout_seconds=0, caller=requester)
    if not isinstance(sent, SendResult) or sent.flow_id is None:
        raise RuntimeError(f"exchange {i} was not accepted: {sent}")
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        flow = client.get_flow(sent.flow_id)
        if flow.status == "done":
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"exchange {i} did not finish in {TIMEOUT_S:g}s")
        time.sleep(POLL_S)
    if flow.delivery is None or flow.delivery.delivered_at is None or len(flow.steps) != HOPS + 1:
        raise RuntimeError(f"exchange {i} ended without its {HOPS} runs and delivery: {flow.wire()}")
    return (flow.delivery.delivered_at - started_ms) / 1000


def clawbus_exchange(stack: Stack, count: int, warmup: int) -> Latency:
    seconds: list[float] = []
    with clawbus_workers(stack, 1), stack.client() as client:
        for i in range(warmup + count):
            took = one_exchange(client, i)
            if i >= warmup:
                seconds.append(took)
    return Latency.of(seconds)


def bare_sequence(stack: Stack, count: int, warmup: int) -> Latency:
    with bare_workers(stack, 1) as app:
        noop = app.tasks[bare_celery.NOOP_TASK]

        def seven(_: int) -> None:
            for _hop in range(HOPS):
                noop.delay().get(timeout=10)

        return Latency.of(timed_calls(seven, count, warmup))


def run(stack: Stack, count: int, warmup: int) -> Section:
    clawbus = clawbus_exchange(stack, count, warmup)
    bare = bare_sequence(stack, count, warmup)
    return Section(
        title=f"4. agent-to-agent exchange, maxPingPongTurns=5 (7 runs + delivery), 1 worker, N={count}",
        measured_label="clawbus send -> delivered",
        baseline_label=f"{HOPS} sequential bare Celery round trips",
        rows=[
            Row("p50 wall time", "ms", clawbus.p50_ms, bare.p50_ms, TARGET),
            Row("p95 wall time", "ms", clawbus.p95_ms, bare.p95_ms),
        ],
        details={"clawbus": asdict(clawbus), "bare": asdict(bare)},
    )
