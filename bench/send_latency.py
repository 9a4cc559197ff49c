"""Figure 1: ``sessions_send`` with a wait, sequential, against a bare Celery ``delay().get()`` round trip.

Both sides run one worker process: clawbus's at the defaults a user gets (a threads pool), bare Celery's a
prefork pool of one (its fastest round trip). Each send targets a fresh cron session (opened beforehand,
untimed: a send opens none) so every call does the same work. A send's reply comes before its announce
step and delivery; those are let finish (untimed) before the next call, so each call meets an idle worker
like each bare round trip does. Figure 4 times the whole exchange.

The figure's client is a keep-alive ``http.client`` connection (``bench.load.Poster``, figure 2's load
generator): the figure is the service's latency, and the client shares the two cores with it. The same
sends through the Python client (``clawbus_client``, built on httpx, about 0.3 ms more per call) are a row
of their own.

On a small shared machine the speed of everything drifts by tens of percent over a minute, so the sides
take turns: ``ROUNDS`` rounds (a quick run's one: each round starts each side's worker again), each
measuring clawbus, then bare Celery, then bare Celery with events on, a slice of the calls each; a drift
lands on all three alike.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from itertools import count as counter

from clawbus_client import Client
from clawbus_client.models import SendResult, ToolFailure

from bench import bare_celery
from bench.load import Poster, open_sessions
from bench.report import Row, Section, Target
from bench.stack import TOKEN, Stack, bare_workers, clawbus_workers
from bench.stats import Latency, timed_calls

TARGET = Target("<=", 2.0)
WAIT_S = 10
ROUNDS = 4


def clawbus_latency(
    stack: Stack, count: int, warmup: int, sessions: counter[int], python_client: bool = False
) -> list[float]:
    """``count`` timed sends with a wait, through ``Poster`` (or the Python client)."""
    seconds: list[float] = []
    keys = [f"agent:main:cron:bench-send-{next(sessions)}" for _ in range(warmup + count)]
    open_sessions(stack, keys)  # a send opens no session: opened here, untimed
    with clawbus_workers(stack, 1), stack.client() as client:
        poster = Poster(stack.api_url, TOKEN)

        def send(key: str) -> SendResult | ToolFailure:
            if python_client:
                return client.sessions_send(key, "ping", timeout_seconds=WAIT_S)
            args = {"sessionKey": key, "message": "ping", "timeoutSeconds": WAIT_S}
            answer = poster.post("/tools/invoke", {"tool": "sessions_send", "args": args})
            return SendResult.model_validate(answer["result"]["details"])

        try:
            for i, key in enumerate(keys):
                started = time.perf_counter()
                result = send(key)
                took = time.perf_counter() - started
                if not isinstance(result, SendResult) or result.status != "ok" or result.flow_id is None:
                    raise RuntimeError(f"sessions_send {i} did not succeed: {result}")
                _settle(client, result.flow_id)
                if i >= warmup:
                    seconds.append(took)
        finally:
            poster.close()
    return seconds


def _settle(client: Client, flow_id: str) -> None:
    """Untimed: the send's announce and delivery run after its reply; the next call starts on an idle
    worker, as every bare round trip does."""
    deadline = time.monotonic() + WAIT_S
    while client.get_flow(flow_id).status != "done":
        if time.monotonic() > deadline:
            raise RuntimeError(f"flow {flow_id} did not end in {WAIT_S}s")
        time.sleep(0.005)


def bare_latency(stack: Stack, count: int, warmup: int, events: bool = False) -> list[float]:
    with bare_workers(stack, 1, events) as app:
        noop = app.tasks[bare_celery.NOOP_TASK]

        def round_trip(_: int) -> None:
            noop.delay().get(timeout=WAIT_S)

        return timed_calls(round_trip, count, warmup)


def run(stack: Stack, count: int, warmup: int, rounds: int = ROUNDS) -> Section:
    per_round = max(1, count // rounds)
    sessions = counter()
    sides = ("clawbus", "bare", "bare_events", "python_client")
    samples: dict[str, list[float]] = {side: [] for side in sides}
    for _ in range(rounds):
        samples["clawbus"] += clawbus_latency(stack, per_round, warmup, sessions)
        samples["bare"] += bare_latency(stack, per_round, warmup)
        samples["bare_events"] += bare_latency(stack, per_round, warmup, events=True)
        samples["python_client"] += clawbus_latency(stack, per_round, warmup, sessions, python_client=True)
    clawbus, bare, bare_events, python_client = (Latency.of(samples[side]) for side in sides)
    return Section(
        title=(
            f"1. sessions_send with a wait: 1 worker at the defaults, N={per_round * rounds} in {rounds} "
            f"alternating rounds, {warmup} warm-up calls each"
        ),
        measured_label="clawbus (HTTP API)",
        baseline_label="bare Celery noop .delay().get()",
        rows=[
            Row("p50 latency", "ms", clawbus.p50_ms, bare.p50_ms, TARGET),
            Row("p95 latency", "ms", clawbus.p95_ms, bare.p95_ms),
            Row("mean latency", "ms", clawbus.mean_ms, bare.mean_ms),
            Row("p50 vs bare Celery with events on", "ms", clawbus.p50_ms, bare_events.p50_ms),
            Row("p50 through the Python client (httpx)", "ms", python_client.p50_ms, bare.p50_ms),
        ],
        details={
            "clawbus": asdict(clawbus),
            "bare": asdict(bare),
            "bare_with_events": asdict(bare_events),
            "python_client": asdict(python_client),
        },
    )
