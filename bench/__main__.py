"""``python -m bench`` (``make bench``): clawbus's figures next to bare Celery on the same Redis, same run.

``--quick`` runs every figure at its smallest size, as a smoke test (about two and a half minutes on 2
cores): its real processes (forked from one that has imported what they import) and real work, less of
it; a figure that no longer runs fails it, a target missed is printed. ``--only FIGURE`` (repeatable:
send, throughput, list, exchange, spawn, loop, model, backlog, control, ha, orchestration, busy, capacity,
waits, redis, soak, traffic, tracing, slowlink, chains) picks figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from bench import (
    agent_loop,
    backlog,
    busy,
    capacity,
    chain_guard,
    exchange,
    list_latency,
    model_bound,
    model_traffic,
    orchestration,
    redis_cost,
    redis_ha,
    run_control,
    send_latency,
    slow_link,
    soak,
    spawn,
    throughput,
    tracing_cost,
    waits,
)
from bench.report import Section, render, to_json, write
from bench.stack import API_PROCESSES, Stack, forked_roles, stack, stops_in_background

FIGURES = (
    "send",
    "throughput",
    "list",
    "exchange",
    "spawn",
    "loop",
    "model",
    "backlog",
    "control",
    "ha",
    "orchestration",
    "busy",
    "capacity",
    "waits",
    "redis",
    "soak",
    "traffic",
    "tracing",
    "slowlink",
    "chains",
)


@dataclass(frozen=True)
class Sizes:
    # The run's API (figures that need their own configuration start one of their own).
    api_processes: int
    send_calls: int
    send_warmup: int
    send_rounds: int
    runs: int
    threads: int
    sessions: int
    throughput_workers: tuple[int, ...]
    list_small: int
    list_large: int
    list_calls: int
    list_warmup: int
    exchanges: int
    exchange_warmup: int
    spawns: int
    spawn_warmup: int
    burst: int
    loop_runs: int
    loop_warmup: int
    model: model_bound.Params
    backlog: backlog.Params
    control: run_control.Params
    ha: redis_ha.Params
    orchestration: orchestration.Params
    busy: busy.Params
    capacity: capacity.Params
    waits: waits.Params
    soak: soak.Params
    traffic: model_traffic.Params
    tracing: tracing_cost.Params
    slow_link: slow_link.Params
    chains: chain_guard.Params


FULL = Sizes(
    api_processes=API_PROCESSES,
    send_calls=200,
    send_warmup=20,
    send_rounds=send_latency.ROUNDS,
    runs=2000,
    threads=16,
    sessions=200,
    throughput_workers=(1, 2),
    list_small=1_000,
    list_large=100_000,
    list_calls=200,
    list_warmup=20,
    exchanges=30,
    exchange_warmup=3,
    spawns=30,
    spawn_warmup=3,
    burst=200,
    loop_runs=100,
    loop_warmup=10,
    model=model_bound.Params(runs=1000, sessions=500),
    # 200 exchanges of two 2 s model calls on 5 threads: 160 s of work, steps queued over three 30 s bounds.
    backlog=backlog.Params(sends=200, model_seconds=2.0, concurrency=5),
    control=run_control.Params(cancels=100, first_texts=30),
    ha=redis_ha.Params(accepts=200, warmup=20, waits=50),
    # Three trees of 31 sessions after one to warm the workers; each takes about 8 s of model time.
    orchestration=orchestration.Params(trees=3, warmup=1),
    # 60 runs of four 1 s steps at once on 40 slots, a steer into each: 20 runs wait in the queue.
    busy=busy.Params(runs=60, warmup=4),
    # A twentieth of the sizes, measured: 5,000 sessions x 100 messages, and 50 sessions grown to
    # 10,000 messages each (500,000 messages, about 600 MiB all hot).
    capacity=capacity.Params(
        many_sessions=5_000, short=100, long_sessions=50, stages=(1_000, 2_500, 5_000, 10_000)
    ),
    waits=waits.Params(waits=10_000, cancelled=500, spawn_rate=125),
    soak=soak.Params(minutes=30),
    # The sizes: 1,500 one-call runs on 3 x 100 threads against 1,200 requests/min; 500 leaves.
    traffic=model_traffic.Params(runs=1_500, workers=3, requests_per_minute=1_200, leaves=500),
    # Figure 1's and figure 7's sizes, each side.
    tracing=tracing_cost.Params(sends=200, warmup=20, model=model_bound.Params(runs=1000, sessions=500)),
    # About 0.45 s a send (2 s with its exchange let finish) and 0.27 s a bare round trip over the links.
    slow_link=slow_link.Params(sends=40, warmup=2),
    chains=chain_guard.Params(sends=500, guard_calls=100_000),
)
# Each figure's real processes and real work, less of it: a few calls or runs a side, one round where the
# full run alternates several (each round starts its workers again), one API process, model steps and
# streams of a fraction of a second, two restarts, waits held for seconds, a soak of 6 s. What a figure
# measures then means little; that it runs is what the quick run proves (about 2.5 min on 2 cores, against
# 12-13 min before these sizes and the forked, overlapping starts and stops of bench/stack.py).
QUICK = replace(
    FULL,
    api_processes=1,
    send_calls=20,
    send_warmup=3,
    send_rounds=1,
    runs=200,
    sessions=100,
    throughput_workers=(1,),
    list_large=5_000,
    list_calls=20,
    list_warmup=3,
    exchanges=3,
    exchange_warmup=1,
    spawns=3,
    spawn_warmup=1,
    burst=10,
    loop_runs=10,
    loop_warmup=2,
    model=model_bound.Params(runs=100, sessions=100, stream_s=0.5),
    backlog=backlog.Params(sends=10, model_seconds=0.2, concurrency=2),
    control=run_control.Params(cancels=10, first_texts=1),
    ha=redis_ha.Params(accepts=20, warmup=3, waits=10, rounds=1, restarts=2),
    orchestration=orchestration.Params(trees=1, warmup=0, hop_calls=10, hop_warmup=1, step_ms=200),
    busy=busy.Params(runs=4, warmup=1, step_s=0.5),
    capacity=capacity.Params(many_sessions=500, short=100, long_sessions=10, stages=(1_000, 2_500, 5_000)),
    waits=waits.Params(waits=200, cancelled=20, spawn_rate=200, held_s=10.0),
    soak=soak.Params(minutes=0.1, sample_s=1.5),
    traffic=model_traffic.Params(runs=30, workers=1, requests_per_minute=600, leaves=60, probes=5),
    tracing=tracing_cost.Params(
        sends=6, warmup=2, model=model_bound.Params(runs=100, sessions=100, stream_s=0.5), rounds=1
    ),
    slow_link=slow_link.Params(sends=1, warmup=1, rounds=1),
    chains=chain_guard.Params(sends=50, guard_calls=10_000),
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="every figure at its smallest size: a smoke run")
    parser.add_argument("--only", action="append", choices=FIGURES, help="run only this figure (repeatable)")
    return parser.parse_args(argv)


def measure(figure: str, running: Stack, sizes: Sizes) -> Section:
    if figure == "send":
        return send_latency.run(running, sizes.send_calls, sizes.send_warmup, sizes.send_rounds)
    if figure == "throughput":
        params = throughput.Params(sizes.runs, sizes.threads, sizes.sessions)
        return throughput.run(running, params, sizes.throughput_workers)
    if figure == "spawn":
        return spawn.run(running, sizes.spawns, sizes.spawn_warmup, sizes.burst)
    if figure == "loop":
        return agent_loop.run(running, sizes.loop_runs, sizes.loop_warmup)
    if figure == "model":
        return model_bound.run(running, sizes.model)
    if figure == "backlog":
        return backlog.run(running, sizes.backlog)
    if figure == "control":
        return run_control.run(running, sizes.control)
    if figure == "ha":
        return redis_ha.run(running, sizes.ha)
    if figure == "orchestration":
        return orchestration.run(running, sizes.orchestration)
    if figure == "busy":
        return busy.run(running, sizes.busy)
    if figure == "capacity":
        return capacity.run(running, sizes.capacity)
    if figure == "waits":
        return waits.run(running, sizes.waits)
    if figure == "tracing":
        return tracing_cost.run(running, sizes.tracing)
    if figure == "chains":
        return chain_guard.run(running, sizes.chains)
    if figure == "slowlink":
        return slow_link.run(running, sizes.slow_link)
    if figure == "traffic":
        return model_traffic.run(running, sizes.traffic)
    if figure == "soak":
        return soak.run(running, sizes.soak)
    if figure == "redis":
        return redis_cost.run(running, throughput.Params(sizes.runs, sizes.threads, sizes.sessions))
    if figure == "exchange":
        return exchange.run(running, sizes.exchanges, sizes.exchange_warmup)
    return list_latency.run(running, sizes.list_small, sizes.list_large, sizes.list_calls, sizes.list_warmup)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    figures = [f for f in FIGURES if not args.only or f in args.only]
    root = Path(tempfile.mkdtemp(prefix="clawbus-bench-"))
    document: dict[str, Any] = {
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "mode": "quick" if args.quick else "full",
        "sizes": asdict(sizes),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version(), "loadStart": os.getloadavg()},
        "sections": [],
    }
    ok = False
    try:
        with (
            forked_roles(args.quick),
            stack(root, sizes.api_processes) as running,
            stops_in_background(args.quick),
        ):
            load = ", ".join(f"{value:.2f}" for value in document["host"]["loadStart"])
            print(
                f"{document['mode']} run: redis {running.redis_url}, API {running.api_url}, logs in {root}\n"
                f"{os.cpu_count()} CPUs, load average {load} at start\n",
                flush=True,
            )
            for figure in figures:
                # Each figure starts on an empty Redis: what one leaves (queued runs and their messages, a
                # model's learned limits, flows in flight) must not measure in the next one.
                with running.redis() as client:
                    client.flushdb()
                started = time.monotonic()
                section = measure(figure, running, sizes)
                document["sections"].append(to_json(section))
                print(f"{render(section)}\n  ({figure}: {time.monotonic() - started:.1f} s)\n", flush=True)
        ok = True
    finally:
        document["host"]["loadEnd"] = os.getloadavg()
        if document["sections"]:
            print(f"results: {write(document)}")
        if ok:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"logs kept in {root}", file=sys.stderr)
    # A MISS is a finding to report, not a failure of the run: the exit status says only whether it ran.
    return 0


if __name__ == "__main__":
    sys.exit(main())
