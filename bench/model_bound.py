"""Figure 7: model-bound runs. Runs whose model takes seconds, as real agent work does: 1,000 chat messages
through the HTTP API to 500 sessions of an agent on the ``openai`` runtime, against a fake OpenAI-compatible
server that streams every answer over 2 s; one worker process at the defaults a user gets.

The ideal is every pool slot busy from the first accept to the last end: 2 s x ceil(runs / concurrency)
(and never less than one session's runs one after another). The worker's resident memory is sampled from
/proc while it works; every run must end ``ok`` after one attempt, with one model call and its reply once
in its session's transcript.
"""

from __future__ import annotations

import math
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from bench.load import fan_out, posters
from bench.report import Row, Section
from bench.stack import Stack, clawbus_worker, model_stack
from clawbus.shared.config import Config
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, paced

STREAM_S = 2.0
SUBMIT_THREADS = 16
SAMPLE_S = 0.2


@dataclass(frozen=True)
class Params:
    runs: int
    sessions: int
    # How long the model takes to stream an answer (a quick run's is shorter).
    stream_s: float = STREAM_S


@dataclass(frozen=True)
class Outcome:
    runs: int
    concurrency: int
    wall_s: float
    ideal_s: float
    peak_rss_mib: float
    model_calls: int
    max_streams_at_once: int
    ended_ok_once: int
    replies_once: int
    idle_rss_mib: float = 0.0
    # CPU time the worker process spent on the runs (user + system).
    worker_cpu_s: float = 0.0


def config(model_url: str) -> dict[str, Any]:
    return {
        "agents": {"list": [{"id": "main", "default": True}, {"id": "gpt", "model": "fake/gpt"}]},
        "models": {"providers": {"fake": {"type": "openai", "baseUrl": model_url, "models": ["gpt"]}}},
    }


def _answer(body: dict[str, Any], stream_s: float) -> Reply:
    asked = body["messages"][-1]["content"]
    return paced(f"Here is what I found about {asked}: it is done.", stream_s)


def measure(stack: Stack, params: Params) -> Outcome:
    with fake_openai() as model, model_stack(stack, config(model.url)) as bound:
        model.default = partial(_answer, stream_s=params.stream_s)
        concurrency = Config().worker.pool_size()
        with clawbus_worker(bound) as worker:
            pid = worker.process.pid if worker.process else 0
            idle_rss, cpu_before = _rss_kib(pid), _cpu_seconds(pid)
            with _peak_rss(pid) as peak:
                run_ids, keys = _submit(bound, params)
                ended = _wait_all(bound, run_ids, timeout_s=60 + params.runs * params.stream_s / 4)
            cpu = _cpu_seconds(pid) - cpu_before
        outcome = _outcome(bound, model, params, concurrency, run_ids, keys, ended, peak[0])
        return replace(outcome, idle_rss_mib=idle_rss / 1024, worker_cpu_s=cpu)


def _submit(stack: Stack, params: Params) -> tuple[list[str], list[str]]:
    tag = uuid.uuid4().hex[:6]
    keys = [f"agent:gpt:cron:fig7-{tag}-{i % params.sessions}" for i in range(params.runs)]
    with posters(stack) as poster:

        def send(i: int) -> str:
            body = {"message": f"question {i}", "timeoutSeconds": 0}
            result = poster().post(f"/v1/sessions/{keys[i]}/messages", body)
            if result.get("status") != "accepted":
                raise RuntimeError(f"message {i} was not accepted: {result}")
            return str(result["runId"])

        return fan_out(send, params.runs, SUBMIT_THREADS), keys


def _wait_all(stack: Stack, run_ids: list[str], timeout_s: float) -> list[dict[str, str]]:
    """Every run's hash once all are terminal."""
    deadline = time.monotonic() + timeout_s
    with stack.redis() as client:
        while True:
            pipe = client.pipeline(transaction=False)
            for run_id in run_ids:
                pipe.hmget(stack.keys.run(run_id), "status", "createdAt", "endedAt", "attempts", "reply")
            rows = pipe.execute()
            if all(row[0] in ("ok", "error", "timeout", "aborted") for row in rows):
                fields = ("status", "createdAt", "endedAt", "attempts", "reply")
                return [dict(zip(fields, row, strict=True)) for row in rows]
            if time.monotonic() > deadline:
                waiting = sum(row[0] not in ("ok", "error", "timeout", "aborted") for row in rows)
                raise RuntimeError(f"{waiting} of {len(run_ids)} runs not ended after {timeout_s:g}s")
            time.sleep(0.25)


def _outcome(
    stack: Stack,
    model: FakeOpenAI,
    params: Params,
    concurrency: int,
    run_ids: list[str],
    keys: list[str],
    ended: list[dict[str, str]],
    peak_rss: float,
) -> Outcome:
    first = min(int(run["createdAt"]) for run in ended)
    last = max(int(run["endedAt"]) for run in ended)
    per_session = math.ceil(params.runs / params.sessions)
    ideal = params.stream_s * max(math.ceil(params.runs / concurrency), per_session)
    ok_once = sum(run["status"] == "ok" and run["attempts"] == "1" for run in ended)
    with stack.redis() as client:
        replies_once = 0
        for key in sorted(set(keys)):
            texts = [entry["m"] for _id, entry in client.xrange(stack.keys.transcript(key))]
            mine = [run for run, k in zip(ended, keys, strict=True) if k == key]
            replies_once += sum(sum(run["reply"] in text for text in texts) == 1 for run in mine)
    return Outcome(
        runs=len(run_ids),
        concurrency=concurrency,
        wall_s=(last - first) / 1000,
        ideal_s=ideal,
        peak_rss_mib=peak_rss / 1024,
        model_calls=len(model.requests),
        max_streams_at_once=model.max_in_flight,
        ended_ok_once=ok_once,
        replies_once=replies_once,
    )


@contextmanager
def _peak_rss(pid: int) -> Iterator[list[float]]:
    """The highest resident set (KiB) of ``pid`` and its children, sampled until the block ends."""
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(SAMPLE_S):
            peak[0] = max(peak[0], float(sum(_rss_kib(p) for p in [pid, *_children(pid)])))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far (its threads included), from /proc/<pid>/stat."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def run(stack: Stack, params: Params) -> Section:
    outcome = measure(stack, params)
    every_once = outcome.ended_ok_once == outcome.replies_once == outcome.model_calls == outcome.runs
    per_run_mib = (outcome.peak_rss_mib - outcome.idle_rss_mib) / outcome.concurrency
    return Section(
        title=(
            f"7. model-bound runs: {params.runs} chat messages to {params.sessions} sessions, a model "
            f"streaming each answer over {params.stream_s:g}s, 1 worker process at the defaults "
            f"(threads pool, {outcome.concurrency} runs at once)"
        ),
        measured_label="clawbus",
        baseline_label=f"ideal: {params.stream_s:g}s x ceil(runs / {outcome.concurrency})",
        rows=[Row("first accept -> last end", "s", outcome.wall_s, outcome.ideal_s)],
        notes=[
            f"worker RSS {outcome.idle_rss_mib:.0f} MiB idle, {outcome.peak_rss_mib:.0f} MiB at peak "
            f"({per_run_mib:.2f} MiB per run in flight); the model had {outcome.max_streams_at_once} "
            "answers streaming at once",
            f"worker CPU {outcome.worker_cpu_s:.1f}s for {outcome.runs} runs "
            f"({1000 * outcome.worker_cpu_s / outcome.runs:.1f} ms per run, "
            f"{outcome.worker_cpu_s / outcome.wall_s:.2f} cores on average)",
            f"{outcome.ended_ok_once} of {outcome.runs} runs ended ok after one attempt, "
            f"{outcome.model_calls} model calls, {outcome.replies_once} replies once in their transcript "
            f"({'every run ended once' if every_once else 'NOT every run ended once'})",
        ],
        details={"outcome": asdict(outcome)},
    )
