"""Figure 16: a soak (issue "Capacity"): steady load for ``minutes`` (30 in a full run) of waiting chat
messages, waiting ``sessions_send`` exchanges, spawns, run waits by id and run streams, on 2 workers, beat
and the API, with a 200 ms model. Every minute the memory of the API processes, the workers and Redis is
sampled; after the warm-up (the first fifth) it must stay flat: a leak is a failure. Every run must end
once, and ok.

Redis keeps each ended run for ``runs.retentionHours``, so its memory grows by the run records by design;
the soak subtracts what those records take (``MEMORY USAGE`` of a sample of them, times the runs made) and
judges the rest. Transcripts are bounded by the hot window (``hotMessages`` 100 here), so the sessions'
part must stay flat.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.load import open_sessions
from bench.report import Row, Section, Target
from bench.stack import TOKEN, Stack, api_pid, clawbus_workers, model_stack, pid_of
from bench.stats import percentile
from clawbus.api.processes import wait_for
from clawbus.shared.wire.models import RunStatus

SESSIONS = 40
THREADS = 8
MIB = 1024 * 1024


@dataclass(frozen=True)
class Params:
    minutes: float
    sample_s: float = 60.0


@dataclass
class Sample:
    at_s: float
    api_rss: int
    worker_rss: int
    redis_used: int
    runs: int


@dataclass
class Tally:
    runs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    refusals: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ran(self, run_id: str) -> None:
        with self.lock:
            self.runs.append(run_id)

    def refused(self, why: str) -> None:
        with self.lock:
            self.refusals[why] = self.refusals.get(why, 0) + 1

    def failed(self, what: str) -> None:
        with self.lock:
            self.errors.append(what)


def config() -> dict[str, Any]:
    return {
        "agents": {
            "list": [
                {
                    "id": "main",
                    "default": True,
                    "model": "brisk/echo",
                    "subagents": {"allowAgents": ["main"]},
                },
            ]
        },
        "models": {"providers": {"brisk": {"type": "echo", "delayMs": 200}}},
        "session": {"hotMessages": 100, "agentToAgent": {"maxPingPongTurns": 1}},
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
        "messages": {"queue": {"cap": 1000}},
    }


def _rss(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(found[1]) * 1024 if found else 0
    return total


def _key(i: int) -> str:
    return f"agent:main:webchat:direct:soak-{i}"


def _one(http: httpx.Client, i: int, tally: Tally) -> None:
    """One operation of the mix, by turn: chat with a wait, an exchange, a spawn, a wait by id, a stream."""
    key = _key(i % SESSIONS)
    kind = i % 5
    try:
        if kind == 0:
            answer = http.post(
                f"/v1/sessions/{key}/messages", json={"message": f"hi {i}", "timeoutSeconds": 30}
            )
            tally.ran(answer.json()["runId"])
        elif kind == 1:
            body = {
                "tool": "sessions_send",
                "sessionKey": key,
                "args": {"sessionKey": f"{key}-peer", "message": f"q {i}", "timeoutSeconds": 30},
            }
            tally.ran(http.post("/tools/invoke", json=body).json()["result"]["details"]["runId"])
        elif kind == 2:
            body = {"tool": "sessions_spawn", "sessionKey": key, "args": {"task": f"look into {i}"}}
            result = http.post("/tools/invoke", json=body).json()["result"]["details"]
            if result["status"] == "accepted":
                tally.ran(result["runId"])
            else:  # a session with maxChildrenPerAgent children not yet ended: refused, as it should be
                tally.refused(result.get("error", ""))
        elif kind == 3:
            run_id = http.post(
                f"/v1/sessions/{key}/messages", json={"message": f"w {i}", "timeoutSeconds": 0}
            ).json()["runId"]
            tally.ran(run_id)
            http.get(f"/v1/runs/{run_id}/wait", params={"timeout": 30}).raise_for_status()
        else:
            run_id = http.post(
                f"/v1/sessions/{key}/messages", json={"message": f"s {i}", "timeoutSeconds": 0}
            ).json()["runId"]
            tally.ran(run_id)
            with http.stream("GET", f"/v1/runs/{run_id}/stream", timeout=60) as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: ended"):
                        break
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        tally.failed(f"{kind}: {type(exc).__name__}: {exc}")


def run(stack: Stack, params: Params) -> Section:
    tally = Tally()
    samples: list[Sample] = []
    with model_stack(stack, config()) as bound, clawbus_workers(bound, 2) as workers, bound.redis() as redis:
        open_sessions(bound, [f"{_key(n)}-peer" for n in range(SESSIONS)])  # what the sends go to
        api_pids = [api_pid(bound.api_url)]
        worker_pids = [pid_of(worker) for worker in workers]
        started = time.monotonic()
        stop = threading.Event()
        numbers = itertools.count()

        def load() -> None:
            with httpx.Client(
                base_url=bound.api_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
            ) as http:
                while not stop.is_set():
                    _one(http, next(numbers), tally)

        with ThreadPoolExecutor(THREADS) as pool:
            for _ in range(THREADS):
                pool.submit(load)
            deadline = started + params.minutes * 60
            while time.monotonic() < deadline:
                samples.append(
                    Sample(
                        at_s=time.monotonic() - started,
                        api_rss=_rss(api_pids),
                        worker_rss=_rss(worker_pids),
                        redis_used=int(redis.info("memory")["used_memory"]),
                        runs=_all_runs(bound, redis),
                    )
                )
                stop.wait(min(params.sample_s, max(deadline - time.monotonic(), 0.1)))
            stop.set()
        statuses = _ended(bound, redis, tally.runs)
        record = _run_record_bytes(bound, redis, tally.runs)
        created, finished = _fleet_settled(bound, redis)
        hot = sum(int(redis.xlen(bound.keys.transcript(_key(i)))) for i in range(SESSIONS))
    return _section(params, samples, tally, statuses, record, (created, finished), hot)


def _all_runs(stack: Stack, redis: Any) -> int:
    """Runs accepted on the fleet so far, of every kind (reply turns, announces and children included)."""
    return sum(int(n) for n in redis.hvals(stack.keys.metrics_runs_created()))


def _fleet_settled(stack: Stack, redis: Any) -> tuple[int, int]:
    """Runs accepted and ended on the fleet, once the last announce and report have ended too (a minute
    at most after the load stopped)."""

    def counts() -> tuple[int, int]:
        return _all_runs(stack, redis), sum(int(n) for n in redis.hvals(stack.keys.metrics_runs_finished()))

    with contextlib.suppress(TimeoutError):  # the counts then say how many did not end
        wait_for(lambda: (c := counts())[1] >= c[0], 60, interval=0.5, what="the fleet's runs ended")
    return counts()


def _ended(stack: Stack, redis: Any, run_ids: list[str]) -> dict[str, int]:
    """Each run's status once all have ended (a minute at most after the load stops)."""
    deadline = time.monotonic() + 60
    while True:
        pipe = redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hget(stack.keys.run(run_id), "status")
        statuses = pipe.execute()
        if (
            all(s in {r.value for r in RunStatus if r.terminal} for s in statuses)
            or time.monotonic() > deadline
        ):
            counted: dict[str, int] = {}
            for status in statuses:
                counted[str(status)] = counted.get(str(status), 0) + 1
            return counted
        time.sleep(0.5)


def _run_record_bytes(stack: Stack, redis: Any, run_ids: list[str]) -> float:
    """What an ended run's records (its hash and event stream) take in Redis, on average over a sample."""
    sample = run_ids[:: max(len(run_ids) // 200, 1)]
    sizes = [
        int(redis.memory_usage(stack.keys.run(run_id)) or 0)
        + int(redis.memory_usage(stack.keys.run_events(run_id)) or 0)
        for run_id in sample
    ]
    return sum(sizes) / max(len(sizes), 1)


def _section(
    params: Params,
    samples: list[Sample],
    tally: Tally,
    statuses: dict[str, int],
    record: float,
    fleet: tuple[int, int],
    hot_messages: int,
) -> Section:
    """``fleet``: runs accepted and runs ended on the whole fleet (the metrics counters)."""
    warm = [s for s in samples if s.at_s >= params.minutes * 60 / 5]
    first, last = warm[0], warm[-1]
    # Redis keeps every ended run, flow, delivery and sub-agent session for runs.retentionHours (or
    # archiveAfterMinutes): it grows by those records, a fixed cost per run; a leak would raise the cost.
    middle = warm[len(warm) // 2]
    early = (middle.redis_used - first.redis_used) / max(middle.runs - first.runs, 1)
    late = (last.redis_used - middle.redis_used) / max(last.runs - middle.runs, 1)
    minutes = (last.at_s - first.at_s) / 60
    rows = [
        Row(
            "API RSS, last sample vs first after warm-up",
            "MiB",
            last.api_rss / MIB,
            first.api_rss / MIB,
            Target("<=", 1.1),
        ),
        Row(
            "workers' RSS, last vs first after warm-up",
            "MiB",
            last.worker_rss / MIB,
            first.worker_rss / MIB,
            Target("<=", 1.1),
        ),
        Row(
            "Redis bytes per run accepted, second half vs first after warm-up",
            "B",
            late,
            early,
            Target("<=", 1.1),
        ),
        Row(
            f"messages hot in the {SESSIONS} sessions' transcripts (hotMessages 100)",
            "messages",
            hot_messages,
            SESSIONS * 110,
            Target("<=", 1.0),
        ),
        Row(
            "runs ended ok, of those made", "runs", statuses.get("ok", 0), len(tally.runs), Target(">=", 1.0)
        ),
        Row(
            "runs ended on the fleet, of those accepted (every kind: once each is 1.00 exactly)",
            "runs",
            fleet[1],
            fleet[0],
            Target(">=", 1.0),
        ),
        Row("operations that failed", "ops", len(tally.errors), max(len(tally.runs), 1), Target("<=", 0.0)),
    ]
    rate = len(tally.runs) / (samples[-1].at_s if samples else 1)
    return Section(
        title=(
            f"16. soak: {params.minutes:g} min of chat waits, exchanges, spawns, waits by id and streams "
            f"({THREADS} clients, {SESSIONS} sessions, a 200 ms model, 2 workers)"
        ),
        measured_label="end",
        baseline_label="after warm-up",
        rows=rows,
        notes=[
            f"{len(tally.runs):,} runs started by the clients ({rate:.1f}/s), {fleet[0]:,} on the fleet; "
            f"judged over {minutes:.1f} min after a warm-up of {params.minutes / 5:g} min",
            f"an ended chat run's own records take {record:,.0f} B in Redis until runs.retentionHours: "
            f"Redis grew {(warm[-1].redis_used - warm[0].redis_used) / MIB:,.1f} MiB in all",
            "samples (min: API / workers / Redis MiB): "
            + ", ".join(
                f"{s.at_s / 60:.0f}: {s.api_rss / MIB:.0f} / {s.worker_rss / MIB:.0f} / "
                f"{s.redis_used / MIB:.0f}"
                for s in samples
            ),
            "the clients' runs by status: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
            *(f"spawns refused {n} times: {why}" for why, n in tally.refusals.items()),
            *(f"failed: {e}" for e in tally.errors[:5]),
        ],
        details={
            "samples": [asdict(s) for s in samples],
            "statuses": statuses,
            "runRecordBytes": record,
            "p50RunsPerSample": percentile([float(s.runs) for s in samples], 50) if samples else 0,
        },
    )
