"""Figure 18: what traces cost. Figure 1 (``sessions_send`` with a wait, one worker) and figure 7 (model-bound
runs on one worker process of 100 threads) measured with tracing on (every span sampled, exported over
OTLP/HTTP to a receiver in the bench process) against off, in the same run: the same Redis, an API and
workers of their own for the traced side. Figure 1's sides take turns in rounds, as figure 1 does, so a
drift of the machine's speed lands on both.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import count as counter

from bench import model_bound, send_latency
from bench.report import Row, Section, Target
from bench.stack import Stack, api
from bench.stats import Latency
from clawbus.api.processes import free_port, wait_for
from tests.support.processes import Role

SEND_TARGET = Target("<=", 1.15)
ROUNDS = 4


@dataclass(frozen=True)
class Params:
    sends: int
    warmup: int
    model: model_bound.Params
    # Each round starts both sides' workers again.
    rounds: int = ROUNDS


@contextmanager
def traced(stack: Stack) -> Iterator[tuple[Stack, Role]]:
    """The run's Redis with an API (and, started on it, workers) sending every span to a receiver in a
    process of its own, as a collector would be: decoding spans takes none of the measuring process's time."""
    port = free_port()
    argv = [sys.executable, "-m", "tests.support.otlp_receiver", str(port)]
    receiver = Role(argv, {**os.environ, "PYTHONUNBUFFERED": "1"}, stack.root / "otlp-receiver.log").start()
    try:
        wait_for(lambda: "ready" in receiver.output() or receiver.exited(), 30, what="the OTLP receiver")
        env = {
            **stack.env,
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://127.0.0.1:{port}/v1/traces",
            "OTEL_TRACES_SAMPLER": "always_on",
        }
        with api(env, stack.root) as url:
            yield Stack(stack.root, stack.server, env, url, stack.config), receiver
    finally:
        receiver.stop()


def _spans(receiver: Role) -> int:
    found = re.search(r"spans (\d+)", receiver.output())
    return int(found[1]) if found else 0


def run(stack: Stack, params: Params) -> Section:
    per_round = max(1, params.sends // params.rounds)
    sessions = counter()
    off: list[float] = []
    on: list[float] = []
    with traced(stack) as (traced_stack, receiver):
        for _ in range(params.rounds):
            off += send_latency.clawbus_latency(stack, per_round, params.warmup, sessions)
            on += send_latency.clawbus_latency(traced_stack, per_round, params.warmup, sessions)
        model_off = model_bound.measure(stack, params.model)
        model_on = model_bound.measure(traced_stack, params.model)
    spans = _spans(receiver)
    send_off, send_on = Latency.of(off), Latency.of(on)
    cpu_off = 1000 * model_off.worker_cpu_s / model_off.runs
    cpu_on = 1000 * model_on.worker_cpu_s / model_on.runs
    return Section(
        title=(
            f"18. tracing's cost: figure 1 (N={per_round * params.rounds} in {params.rounds} alternating "
            f"rounds) and figure 7 ({params.model.runs} model-bound runs), every span sent over OTLP/HTTP, "
            "against off"
        ),
        measured_label="tracing on",
        baseline_label="tracing off",
        rows=[
            Row("sessions_send with a wait, p50", "ms", send_on.p50_ms, send_off.p50_ms, SEND_TARGET),
            Row("sessions_send with a wait, p95", "ms", send_on.p95_ms, send_off.p95_ms),
            Row("model-bound runs, first accept -> last end", "s", model_on.wall_s, model_off.wall_s),
            Row("worker CPU per model-bound run", "ms", cpu_on, cpu_off),
        ],
        notes=[
            f"{spans} spans received from the traced side's API and workers",
            f"model-bound: {model_on.ended_ok_once} / {model_off.ended_ok_once} of {model_on.runs} runs "
            "ended ok once (on / off)",
            f"worker CPU {cpu_on:.1f} / {cpu_off:.1f} ms per run (on / off)",
        ],
        details={
            "send_on": asdict(send_on),
            "send_off": asdict(send_off),
            "model_on": asdict(model_on),
            "model_off": asdict(model_off),
        },
    )
