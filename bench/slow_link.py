"""Figure 19: ``sessions_send`` with a wait over slow links, 50 ms between every pair of hosts that talk,
against a bare Celery round trip over the same links (issue 37, item 4).

The delay is a proxy's (tests/support/slow_link.py: 25 ms each way, chunks released in order at their due
time, so a pipeline pays it once), as this machine's kernel has no netem qdisc. clawbus: the client -> the
API (one process), the API -> Redis, the worker -> Redis, each through a link of its own; the client is
the Python client (``clawbus_client``: it sends an ``Idempotency-Key``, as the CLI and the console do).
Bare Celery: the producer -> Redis and its worker -> Redis, each through a link of its own; a no-op task's
``delay().get()``. Both sides' processes are up for the whole figure (idle, a worker only polls its
queue), and the sides take turns in rounds, as figure 1's do. Each send's Redis round trips on the
API's path (from the request reaching the API to its answer leaving it) are counted at the link.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from itertools import count as counter
from statistics import median

from celery import Celery
from clawbus_client import Client
from clawbus_client.models import SendResult

from bench import bare_celery, send_latency
from bench.load import open_sessions
from bench.report import Row, Section, Target
from bench.stack import CLAWBUS_CONFIG, TOKEN, Stack, api, bare_workers, clawbus_worker
from bench.stats import Latency
from tests.support.processes import write_config
from tests.support.slow_link import ONE_WAY_S, SlowLink, round_trips_on_path

WAIT_S = 20
# The run's agents, with no reply-back turns: a send's exchange is its run, the announce and the delivery,
# which the figure lets finish (untimed) before the next send, each a few runs over the links.
CONFIG = {**CLAWBUS_CONFIG, "session": {"agentToAgent": {"maxPingPongTurns": 0}}}
ROUNDS = 2
# The goal: at most four Redis round trips on the API's path of a send with a wait.
GOAL_ROUND_TRIPS = 4


@dataclass(frozen=True)
class Params:
    sends: int
    warmup: int
    rounds: int = ROUNDS


@dataclass(frozen=True)
class Sent:
    seconds: float
    round_trips: int  # the API's, to Redis, on the answer's path
    commands: tuple[str, ...]  # the command that opened each


def run(stack: Stack, params: Params) -> Section:
    per_round = max(1, params.sends // params.rounds)
    sessions = counter()
    sent: list[Sent] = []
    bare: list[float] = []
    with slow_clawbus(stack) as (client_api, api_redis), slow_bare(stack) as app:
        for round_ in range(params.rounds):
            warmup = params.warmup if round_ == 0 else 0
            sent += clawbus_sends(stack, client_api, api_redis, per_round, warmup, sessions)
            bare += bare_round_trips(app, per_round, warmup)
    clawbus_latency = Latency.of([s.seconds for s in sent])
    bare_latency = Latency.of(bare)
    trips = sorted(s.round_trips for s in sent)
    link_ms = 2 * ONE_WAY_S * 1000
    return Section(
        title=(
            f"19. sessions_send with a wait over slow links ({link_ms:.0f} ms between every pair of hosts, "
            f"a delaying proxy), 1 worker, N={per_round * params.rounds} in {params.rounds} alternating "
            "rounds"
        ),
        measured_label="clawbus (Python client)",
        baseline_label="bare Celery noop .delay().get()",
        rows=[
            Row("p50 latency", "ms", clawbus_latency.p50_ms, bare_latency.p50_ms),
            Row("p95 latency", "ms", clawbus_latency.p95_ms, bare_latency.p95_ms),
            Row(
                "p50 in link round trips (50 ms each)",
                "trips",
                clawbus_latency.p50_ms / link_ms,
                bare_latency.p50_ms / link_ms,
            ),
            Row(
                "API's Redis round trips on the answer's path, median",
                "trips",
                median(trips),
                GOAL_ROUND_TRIPS,
                Target("<=", 1.0),
            ),
        ],
        notes=[
            f"the API's Redis round trips per send: min {trips[0]}, max {trips[-1]} (the goal: the baseline "
            f"column); the commands of the last: {', '.join(sent[-1].commands)}",
            *(
                f"a send of {s.round_trips}: {', '.join(s.commands)}"
                for s in sent
                if s.round_trips > GOAL_ROUND_TRIPS
            ),
        ],
        details={
            "clawbus": asdict(clawbus_latency),
            "bare": asdict(bare_latency),
            "apiRoundTrips": trips,
            "commands": [list(s.commands) for s in sent],
        },
    )


@contextmanager
def slow_clawbus(stack: Stack) -> Iterator[tuple[SlowLink, SlowLink]]:
    """An API process and a worker, each reaching Redis through a slow link; yields the client's link to
    the API and the API's link to Redis."""
    redis_at = ("127.0.0.1", stack.server.port)
    config = str(write_config(stack.root, CONFIG))
    with SlowLink(redis_at) as api_redis, SlowLink(redis_at) as worker_redis:
        api_env = {**stack.env, "CLAWBUS_CONFIG": config, "CLAWBUS_REDIS_URL": api_redis.redis_url()}
        worker_env = {**stack.env, "CLAWBUS_CONFIG": config, "CLAWBUS_REDIS_URL": worker_redis.redis_url()}
        worker_stack = replace(stack, env=worker_env)
        with (
            api(api_env, stack.root, processes=1) as url,
            clawbus_worker(worker_stack),
            SlowLink(("127.0.0.1", int(url.rsplit(":", 1)[1]))) as client_api,
        ):
            yield client_api, api_redis


def clawbus_sends(
    stack: Stack, client_api: SlowLink, api_redis: SlowLink, count: int, warmup: int, sessions: counter[int]
) -> list[Sent]:
    keys = [f"agent:main:cron:bench-slow-{next(sessions)}" for _ in range(warmup + count)]
    open_sessions(stack, keys)  # untimed, straight to the run's API
    measured: list[Sent] = []
    with stack.client() as direct, Client(client_api.http_url, TOKEN) as client:
        for i, key in enumerate(keys):
            started = time.perf_counter()
            result = client.sessions_send(key, "ping", timeout_seconds=WAIT_S)
            took = time.perf_counter() - started
            if not isinstance(result, SendResult) or result.status != "ok" or result.flow_id is None:
                raise RuntimeError(f"sessions_send {i} did not succeed: {result}")
            trips = round_trips_on_path(client_api, api_redis)
            commands = tuple(trip.head.split(b"\r\n")[2].decode(errors="replace") for trip in trips)
            send_latency._settle(direct, result.flow_id)  # the exchange let finish, untimed
            if i >= warmup:
                measured.append(Sent(took, len(trips), commands))
    return measured


@contextmanager
def slow_bare(stack: Stack) -> Iterator[Celery]:
    """A bare Celery worker and the app to enqueue with, each reaching Redis through a slow link."""
    redis_at = ("127.0.0.1", stack.server.port)
    with (
        SlowLink(redis_at) as producer,
        SlowLink(redis_at) as worker,
        bare_workers(stack, 1, app_url=producer.redis_url(), worker_url=worker.redis_url()) as app,
    ):
        yield app


def bare_round_trips(app: Celery, count: int, warmup: int) -> list[float]:
    noop = app.tasks[bare_celery.NOOP_TASK]
    seconds: list[float] = []
    for i in range(warmup + count):
        started = time.perf_counter()
        noop.delay().get(timeout=WAIT_S)
        if i >= warmup:
            seconds.append(time.perf_counter() - started)
    return seconds
