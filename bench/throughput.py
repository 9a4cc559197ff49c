"""Figure 2: drained throughput of fire-and-forget runs, against bare Celery no-op tasks.

A run is an inbound chat message (``POST /v1/sessions/{key}/messages``, no wait): exactly one run, where a
``sessions_send`` would also start its announce step and delivery (figure 4 times that whole exchange).

Runs/s = M / (first submit -> last run terminal). The end is read from what the workers recorded (a run's
``endedAt``; the bare task's own timestamp), so when this process notices does not change the figure; and
it notices clawbus's runs ending by their completion signal rather than by polling thousands of hashes,
which would load Redis and the CPUs the workers need.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import redis
from redis.client import PubSub

from bench import bare_celery
from bench.load import Poster, fan_out, posters
from bench.report import Row, Section, Target
from bench.stack import Stack, bare_workers, clawbus_workers
from clawbus.shared.wire.models import RunStatus

TARGET = Target(">=", 0.5)
TERMINAL = frozenset(status.value for status in RunStatus if status.terminal)
POLL_S = 0.1
SILENCE_S = 2.0
# Warm-up traffic first, so process start-up and first imports in the pool children are not measured.
WARMUP_FRACTION = 0.05


@dataclass(frozen=True)
class Params:
    total: int
    threads: int
    sessions: int

    @property
    def warmup(self) -> int:
        return max(20, int(self.total * WARMUP_FRACTION))

    def drain_timeout_s(self) -> float:
        return max(120.0, self.total / 5)


@dataclass(frozen=True)
class Rate:
    per_second: float
    total: int
    seconds: float
    # How long enqueueing alone took: tells a slow producer from a slow consumer.
    submit_seconds: float

    @classmethod
    def of(cls, total: int, started: float, submitted: float, ended: float) -> Rate:
        return cls(total / (ended - started), total, ended - started, submitted - started)


def clawbus_rate(stack: Stack, workers: int, params: Params) -> Rate:
    with clawbus_workers(stack, workers), stack.redis() as client:
        clawbus_batch(stack, client, params, params.warmup)
        return clawbus_batch(stack, client, params, params.total)


def clawbus_batch(stack: Stack, client: redis.Redis, params: Params, total: int) -> Rate:
    # A fresh set of sessions per batch: transcripts left by an earlier batch would make runs dearer.
    tag = uuid.uuid4().hex[:6]

    def send(poster: Poster, i: int) -> str:
        key = f"agent:main:cron:tput-{tag}-{i % params.sessions}"
        result = poster.post(f"/v1/sessions/{key}/messages", {"message": "ping", "timeoutSeconds": 0})
        if result.get("status") != "accepted":
            raise RuntimeError(f"message {i} was not accepted: {result}")
        return str(result["runId"])

    timeout_s = params.drain_timeout_s()
    with _completions(stack, client) as completions, posters(stack) as poster_for_thread:
        started = time.time()
        run_ids = fan_out(lambda i: send(poster_for_thread(), i), total, params.threads)
        submitted = time.time()
        _hear_all(completions, stack.keys.run_done_channel_prefix(), run_ids, timeout_s)
    ended = _runs_ended(stack, client, run_ids, timeout_s)
    return Rate.of(total, started, submitted, ended)


@contextmanager
def _completions(stack: Stack, client: redis.Redis) -> Iterator[PubSub]:
    """Every run's completion signal: the drain is heard, not polled, so it costs Redis next to nothing."""
    pubsub = client.pubsub()
    try:
        pubsub.psubscribe(stack.keys.run_done_channel("*"))
        # Confirmed before the first send, so no completion can slip by unheard.
        confirmed = pubsub.get_message(timeout=5)
        if not confirmed or confirmed["type"] != "psubscribe":
            raise RuntimeError(f"PSUBSCRIBE not confirmed: {confirmed}")
        yield pubsub
    finally:
        pubsub.close()


def _hear_all(pubsub: PubSub, prefix: str, run_ids: list[str], timeout_s: float) -> None:
    """Until every run's completion was heard; a silence hands over to polling the run hashes."""
    waiting = set(run_ids)
    deadline = time.monotonic() + timeout_s
    while waiting and time.monotonic() < deadline:
        message = pubsub.get_message(timeout=SILENCE_S)
        if message is None:
            return
        if message["type"] == "pmessage":
            waiting.discard(message["channel"].removeprefix(prefix))


def _runs_ended(stack: Stack, client: redis.Redis, run_ids: list[str], timeout_s: float) -> float:
    """Wall-clock time (s) the last of ``run_ids`` ended, from their hashes (read once when all were heard
    ending); raises if any failed or the drain times out."""
    deadline = time.monotonic() + timeout_s
    pending, last_ms, failed = run_ids, 0, 0
    while pending:
        pipe = client.pipeline(transaction=False)
        for run_id in pending:
            pipe.hmget(stack.keys.run(run_id), "status", "endedAt")
        still: list[str] = []
        for run_id, (status, ended_at) in zip(pending, pipe.execute(), strict=True):
            if status in TERMINAL:
                last_ms = max(last_ms, int(ended_at))
                failed += status != RunStatus.OK
            else:
                still.append(run_id)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(pending)} of {len(run_ids)} runs not terminal after {timeout_s:g}s")
            time.sleep(POLL_S)
    if failed:
        raise RuntimeError(f"{failed} of {len(run_ids)} runs did not end ok")
    return last_ms / 1000


def bare_rate(stack: Stack, workers: int, params: Params, events: bool = False) -> Rate:
    with bare_workers(stack, workers, events) as app, stack.redis() as client:
        count = app.tasks[bare_celery.COUNT_TASK]
        bare_batch(client, lambda _: count.delay(), params, params.warmup)
        return bare_batch(client, lambda _: count.delay(), params, params.total)


def bare_batch(client: redis.Redis, enqueue: Callable[[int], object], params: Params, total: int) -> Rate:
    client.delete(bare_celery.DONE_KEY, bare_celery.LAST_KEY)
    started = time.time()
    fan_out(enqueue, total, params.threads)
    submitted = time.time()
    deadline = time.monotonic() + params.drain_timeout_s()
    while int(client.get(bare_celery.DONE_KEY) or 0) < total:
        if time.monotonic() > deadline:
            raise RuntimeError(f"bare tasks not drained after {params.drain_timeout_s():g}s")
        time.sleep(POLL_S)
    ended = float(client.get(bare_celery.LAST_KEY) or 0)
    return Rate.of(total, started, submitted, ended)


def run(stack: Stack, params: Params, worker_counts: tuple[int, ...] = (1, 2)) -> Section:
    rows: list[Row] = []
    details: dict[str, object] = {}
    notes: list[str] = []
    for workers in worker_counts:
        clawbus = clawbus_rate(stack, workers, params)
        bare = bare_rate(stack, workers, params)
        bare_events = bare_rate(stack, workers, params, events=True)
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        rows.append(Row(f"throughput, {label}", "/s", clawbus.per_second, bare.per_second, TARGET))
        rows.append(
            Row(f"  vs bare with events on, {label}", "/s", clawbus.per_second, bare_events.per_second)
        )
        details[label] = {
            "clawbus": asdict(clawbus),
            "bare": asdict(bare),
            "bare_with_events": asdict(bare_events),
        }
        notes.append(
            f"{label}: clawbus submitted in {clawbus.submit_seconds:.2f}s, all ended after "
            f"{clawbus.seconds:.2f}s; bare enqueued in {bare.submit_seconds:.2f}s, "
            f"all ran after {bare.seconds:.2f}s"
        )
    return Section(
        title=(
            f"2. fire-and-forget runs (chat messages), drained: M={params.total} from {params.threads} "
            f"threads over {params.sessions} sessions (clawbus workers at the defaults, bare: prefork of one)"
        ),
        measured_label="clawbus runs/s (HTTP API)",
        baseline_label="bare Celery no-op tasks/s",
        rows=rows,
        notes=notes,
        details=details,
    )
