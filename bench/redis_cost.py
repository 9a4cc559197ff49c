"""Figure 15: what one run costs Redis (issue "Capacity"): commands, bytes in and out, and Redis's own CPU
time, against a bare Celery no-op task on the same Redis, in the same run; and the runs per second one
Redis carries at 80% of its core, from its CPU time per run (Redis runs commands on one thread).

A run is figure 2's: a fire-and-forget chat message through the API to one of 200 sessions, run by two
workers at the defaults. The counters are Redis's own (``INFO commandstats``, ``INFO stats``, ``INFO cpu``)
read before and after a batch, after a warm-up batch; so everything a run makes Redis do is counted:
the API's accept, the Celery message, the worker's claim, commit and events, the waits' signals.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import redis

from bench import bare_celery, throughput
from bench.report import Row, Section
from bench.stack import Stack, bare_workers, clawbus_workers

BUSY_CPU = 0.8


@dataclass(frozen=True)
class Counters:
    commands: int
    bytes_in: int
    bytes_out: int
    cpu_s: float

    @classmethod
    def read(cls, client: redis.Redis) -> Counters:
        stats = client.info("commandstats")
        traffic = client.info("stats")
        cpu = client.info("cpu")
        return cls(
            commands=sum(int(entry["calls"]) for entry in stats.values()),
            bytes_in=int(traffic["total_net_input_bytes"]),
            bytes_out=int(traffic["total_net_output_bytes"]),
            cpu_s=float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]),
        )

    def per(self, since: Counters, count: int) -> Counters:
        return Counters(
            commands=round((self.commands - since.commands) / count),
            bytes_in=round((self.bytes_in - since.bytes_in) / count),
            bytes_out=round((self.bytes_out - since.bytes_out) / count),
            cpu_s=(self.cpu_s - since.cpu_s) / count,
        )


def clawbus_cost(stack: Stack, params: throughput.Params) -> Counters:
    with clawbus_workers(stack, 2), stack.redis() as client:
        throughput.clawbus_batch(stack, client, params, params.warmup)
        before = Counters.read(client)
        throughput.clawbus_batch(stack, client, params, params.total)
        return Counters.read(client).per(before, params.total)


def bare_cost(stack: Stack, params: throughput.Params) -> Counters:
    with bare_workers(stack, 2) as app, stack.redis() as client:
        count = app.tasks[bare_celery.COUNT_TASK]
        throughput.bare_batch(client, lambda _: count.delay(), params, params.warmup)
        before = Counters.read(client)
        throughput.bare_batch(client, lambda _: count.delay(), params, params.total)
        return Counters.read(client).per(before, params.total)


def run(stack: Stack, params: throughput.Params) -> Section:
    clawbus = clawbus_cost(stack, params)
    bare = bare_cost(stack, params)
    carried = BUSY_CPU / clawbus.cpu_s
    rows = [
        Row("Redis commands per run", "commands", clawbus.commands, bare.commands),
        Row("bytes into Redis per run", "B", clawbus.bytes_in, bare.bytes_in),
        Row("bytes out of Redis per run", "B", clawbus.bytes_out, bare.bytes_out),
        Row("Redis CPU per run", "us", clawbus.cpu_s * 1e6, bare.cpu_s * 1e6),
        Row("runs/s one Redis carries at 80% CPU", "/s", carried, BUSY_CPU / bare.cpu_s),
    ]
    details: dict[str, Any] = {"clawbus": asdict(clawbus), "bare": asdict(bare)}
    return Section(
        title=(
            f"15. capacity: what a run costs Redis; {params.total} fire-and-forget chat messages over "
            f"{params.sessions} sessions, 2 workers at the defaults"
        ),
        measured_label="clawbus run",
        baseline_label="bare Celery no-op task",
        rows=rows,
        notes=[
            "Redis's own counters over the batch, divided by the runs; the bare side enqueues with delay() "
            "and runs a no-op on a prefork worker, with no result stored",
            f"runs/s at 80%: 0.8 s of Redis CPU a second / {clawbus.cpu_s * 1e6:.0f} us a run "
            "(Redis executes commands on one core; docs/capacity.md takes it from there)",
        ],
        details=details,
    )
