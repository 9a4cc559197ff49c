"""Figure 10: Redis without a single point of failure (docs/architecture.md, "Redis under Sentinel").

What a replica acknowledgement costs: fire-and-forget ``sessions_send`` calls, one at a time, through an
API that waits for one replica (``redis.replicaAcks: 1``, a Redis WAIT in the accept's round trip) and
through one that does not, on the run's Redis with a replica attached to it and one worker draining the
runs; the two APIs take turns, a slice of the calls each, so a drift of the machine lands on both.

What an outage costs: the outages of the HA tests (tests/support/outage.py) on fleets of their own
(two workers, beat, two API processes): a lone Redis killed (kill -9) and restarted 2 s later; the same ten
times in a row, 1 s down each time (each kill may take a script's reply with it); and the master of a
Sentinel set killed under the same load plus 50 waiting sends.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import count as counter
from pathlib import Path

from bench.load import Poster
from bench.report import Row, Section, Target
from bench.stack import TOKEN, Stack, api, clawbus_workers
from bench.stats import Latency
from tests.support.outage import Outage, failover_under_load, restart_under_load
from tests.support.processes import replica_of

ROUNDS = 4
# The HA tests' bound: every accepted run ends within this long of Redis answering again.
RECOVERY_BOUND_S = 15.0
RESTARTS = 10


@dataclass(frozen=True)
class Params:
    accepts: int
    warmup: int
    waits: int
    rounds: int = ROUNDS
    restarts: int = RESTARTS


def run(stack: Stack, params: Params) -> Section:
    without, with_ack = accept_latency(stack, params)
    root = Path(tempfile.mkdtemp(prefix="ha-", dir=stack.root))
    restart = restart_under_load(root / "restart", TOKEN)
    restarts = restart_under_load(root / "restarts", TOKEN, down_s=1.0, restarts=params.restarts)
    failover = failover_under_load(root / "failover", TOKEN, waits=params.waits)
    return Section(
        title=(
            f"10. Redis HA: accept latency with a replica acknowledgement (N={params.accepts} in "
            f"{params.rounds} alternating rounds), a restart, {params.restarts} restarts in a row and a "
            "Sentinel failover under load"
        ),
        measured_label="clawbus",
        baseline_label="baseline / bound",
        rows=[
            Row("accept p50, replicaAcks 1 vs 0", "ms", with_ack.p50_ms, without.p50_ms),
            Row("accept p95, replicaAcks 1 vs 0", "ms", with_ack.p95_ms, without.p95_ms),
            *_outage_rows("restart", restart),
            *_outage_rows(f"{params.restarts} restarts", restarts),
            *_outage_rows("failover", failover),
        ],
        notes=[
            "accept: a fire-and-forget sessions_send over HTTP on loopback; across hosts WAIT adds the "
            "network round trip to the replica",
            f"restart: {_figures(restart)}",
            f"{params.restarts} restarts (kill -> back: the first kill to the last restart): "
            f"{_figures(restarts)}",
            f"failover: {_figures(failover)}",
        ],
        details={
            "accept": {"replicaAcks0": asdict(without), "replicaAcks1": asdict(with_ack)},
            "restart": restart.figures(),
            "restarts": restarts.figures(),
            "failover": failover.figures(),
        },
    )


def _outage_rows(name: str, outage: Outage) -> list[Row]:
    accepted = len(outage.load.accepted)
    ended_once = (
        accepted - len(outage.settled.lost) - len(outage.settled.duplicated) - len(outage.settled.not_ok)
    )
    return [
        Row(f"{name}: accepted runs ended ok, once", "runs", ended_once, accepted, Target(">=", 1.0)),
        Row(
            f"{name}: Redis back -> last accepted run ended",
            "s",
            outage.last_end_after_back_s,
            RECOVERY_BOUND_S,
            None if name == "failover" else Target("<=", 1.0),
        ),
        Row(
            f"{name}: slowest run, accept -> end",
            "s",
            outage.slowest_run_s,
            RECOVERY_BOUND_S,
            Target("<=", 1.0),
        ),
    ]


def _figures(outage: Outage) -> str:
    return ", ".join(f"{name} {value}" for name, value in outage.figures().items())


def accept_latency(stack: Stack, params: Params) -> tuple[Latency, Latency]:
    per_round = max(1, params.accepts // params.rounds)
    sessions = counter()
    samples: dict[int, list[float]] = {0: [], 1: []}
    with replica_of(stack.server), clawbus_workers(stack, 1), _acking_api(stack) as acking_url:
        urls = {0: stack.api_url, 1: acking_url}
        for _ in range(params.rounds):
            for acks, url in urls.items():
                samples[acks] += _accepts(url, per_round, params.warmup, sessions)
    return Latency.of(samples[0]), Latency.of(samples[1])


def _accepts(url: str, count: int, warmup: int, sessions: counter[int]) -> list[float]:
    keys = [f"agent:main:cron:bench-ha-{next(sessions)}" for _ in range(warmup + count)]
    poster = Poster(url, TOKEN)
    seconds: list[float] = []
    try:
        for key in keys:  # a send opens no session: opened first, untimed
            poster.open_session(key)
        for i, key in enumerate(keys):
            args = {"sessionKey": key, "message": "ping", "timeoutSeconds": 0}
            started = time.perf_counter()
            answer = poster.post("/tools/invoke", {"tool": "sessions_send", "args": args})
            took = time.perf_counter() - started
            result = answer.get("result")
            details = result.get("details") if isinstance(result, dict) else None
            if not isinstance(details, dict) or details.get("status") != "accepted":
                raise RuntimeError(f"sessions_send {i} was not accepted: {answer}")
            if i >= warmup:
                seconds.append(took)
    finally:
        poster.close()
    return seconds


@contextmanager
def _acking_api(stack: Stack) -> Iterator[str]:
    """An API on the run's Redis and configuration that acknowledges an accept once a replica has it."""
    with api({**stack.env, "CLAWBUS_REDIS_REPLICA_ACKS": "1"}, stack.root) as url:
        yield url
