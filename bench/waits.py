"""Figure 14: concurrent waits held by one API process (issue "Capacity"), from an external load generator:
locust (``bench/locust_waits.py``, its own process, gevent users), never a loop in this process.

Half the users wait on a run by id (``GET /v1/runs/{id}/wait``), half make a waiting ``sessions_send``;
every wait asks for the ramp's time plus ``HELD_S``. No worker runs, so every run stays queued and a
wait is answered at its deadline, except those on the runs this process cancels once every wait is
held: those end then, and their waits must answer at once. Each answer is timed against its deadline
(or its run's end); the API's memory is read from ``/proc`` before and while all the waits are held.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.load import fan_out, open_sessions, posters
from bench.report import Row, Section, Target
from bench.stack import TOKEN, Stack, api_pid, model_stack
from bench.stats import percentile
from clawbus.api.processes import wait_for

# Every wait outlasts the ramp by this much, so all of them are held at once for a while.
HELD_S = 30.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Params:
    waits: int
    cancelled: int  # runs (of the GET half) cancelled while waited on
    spawn_rate: int  # users locust starts a second
    held_s: float = HELD_S

    @property
    def ramp_s(self) -> float:
        return self.waits / self.spawn_rate

    @property
    def timeout_s(self) -> float:
        """What every wait asks for: past the ramp, so the first is still held when the last arrives."""
        return self.ramp_s + self.held_s


def config() -> dict[str, Any]:
    return {
        "agents": {"list": [{"id": "main", "default": True}]},
        "tools": {"sessions": {"visibility": "agent"}},
        # Every send makes a run a session of its own; none is refused as a busy session's overflow.
        "messages": {"queue": {"cap": 1000}},
    }


def _rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert found
    return int(found[1]) * 1024


def _active_waits(url: str) -> int:
    try:
        text = httpx.get(f"{url}/metrics", timeout=30).text
    except httpx.HTTPError:  # the API is busy taking connections: ask again
        return 0
    found = re.search(r"^clawbus_active_waits (\S+)", text, re.MULTILINE)
    return int(float(found[1])) if found else 0


def _server_mean_wait(url: str, outcome: str) -> float:
    """The API's own mean time of its waits that ended ``outcome`` (its clawbus_wait_seconds histogram)."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    total = re.search(rf'^clawbus_wait_seconds_sum{{outcome="{outcome}"}} (\S+)', text, re.MULTILINE)
    count = re.search(rf'^clawbus_wait_seconds_count{{outcome="{outcome}"}} (\S+)', text, re.MULTILINE)
    return float(total[1]) / float(count[1]) if total and count and float(count[1]) else 0.0


def _queued_runs(stack: Stack, count: int, tag: str) -> list[str]:
    """``count`` runs accepted and left queued (no worker runs them)."""

    with posters(stack) as poster_for_thread:

        def post(i: int) -> str:
            key = f"agent:main:webchat:direct:{tag}-get-{i}"
            result = poster_for_thread().post(
                f"/v1/sessions/{key}/messages", {"message": "hold on", "timeoutSeconds": 0}
            )
            return str(result["runId"])

        return fan_out(post, count, 16)


def run(stack: Stack, params: Params) -> Section:
    tag = uuid.uuid4().hex[:6]
    gets = params.waits // 2
    root = stack.root / f"waits-{tag}"
    root.mkdir(parents=True)
    with model_stack(stack, config()) as bound:
        pid = api_pid(bound.api_url)
        run_ids = _queued_runs(bound, gets, tag)
        # The sending half's sessions (bench/locust_waits.py names them), opened first: a send opens none.
        open_sessions(bound, [f"agent:main:webchat:direct:{tag}-send-{n}" for n in range(gets, params.waits)])
        (root / "runs.txt").write_text("\n".join(run_ids))
        idle_rss = _rss(pid)
        env = {
            **os.environ,
            "WAITS_RUNS": str(root / "runs.txt"),
            "WAITS_GET": str(gets),
            "WAITS_TIMEOUT": str(params.timeout_s),
            "WAITS_TOKEN": TOKEN,
            "WAITS_TAG": tag,
            "WAITS_OUT": str(root / "timings.json"),
        }
        ramp_s, timeout_s = params.ramp_s, params.timeout_s
        argv = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(Path(__file__).with_name("locust_waits.py")),
            "--headless",
            "--host",
            bound.api_url,
            "-u",
            str(params.waits),
            "-r",
            str(params.spawn_rate),
            "--run-time",
            f"{int(ramp_s + timeout_s + 30)}s",
            "--stop-timeout",
            "5",
            "--only-summary",
            "--loglevel",
            "WARNING",
        ]
        with (root / "locust.log").open("wb") as log:
            locust = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
            try:
                held = wait_for(
                    lambda: (n := _active_waits(bound.api_url)) >= params.waits * 0.98 and n,
                    timeout_s,
                    interval=0.5,
                    what="the waits all held",
                )
                peak_rss = _rss(pid)
                cancelled_at: dict[str, float] = {}
                with httpx.Client(
                    base_url=bound.api_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
                ) as http:
                    for run_id in run_ids[: params.cancelled]:
                        cancelled_at[run_id] = time.time()
                        http.post(f"/v1/runs/{run_id}/cancel").raise_for_status()
                locust.wait(timeout=ramp_s + timeout_s + 120)
                server_timeout_s = _server_mean_wait(bound.api_url, "timeout")
            finally:
                if locust.poll() is None:
                    locust.kill()
    timings: list[dict[str, Any]] = json.loads((root / "timings.json").read_text())
    return _section(params, timings, cancelled_at, held, idle_rss, peak_rss, server_timeout_s)


def _section(
    params: Params,
    timings: list[dict[str, Any]],
    cancelled_at: dict[str, float],
    held: int,
    idle_rss: int,
    peak_rss: int,
    server_timeout_s: float,
) -> Section:
    answered = [t for t in timings if t["http"] == 200]
    at_deadline = sorted(
        t["answered"] - t["started"] - params.timeout_s for t in answered if t["runId"] not in cancelled_at
    )
    at_end = sorted(t["answered"] - cancelled_at[t["runId"]] for t in answered if t["runId"] in cancelled_at)
    late = [d for d in at_deadline if abs(d) > 1.0] + [d for d in at_end if d > 1.0]
    by_kind = {
        kind: sorted(
            t["answered"] - t["started"] - params.timeout_s
            for t in answered
            if t["kind"] == kind and t["runId"] not in cancelled_at
        )
        for kind in ("get", "send")
    }
    statuses: dict[str, int] = {}
    for t in timings:
        key = f"{t['kind']}:{t['http']}:{t['status']}"
        statuses[key] = statuses.get(key, 0) + 1
    per_wait = (peak_rss - idle_rss) / held
    rows = [
        Row("waits held at once by one API process", "waits", held, params.waits, Target(">=", 0.98)),
        Row("answered (HTTP 200) of those made", "waits", len(answered), params.waits, Target(">=", 1.0)),
        Row("answer - deadline, p50", "s", percentile(at_deadline, 50), 1.0),
        Row("answer - deadline, p99", "s", percentile(at_deadline, 99), 1.0, Target("<=", 1.0)),
        Row("answer - deadline, max", "s", max(at_deadline), 1.0),
        Row(
            "answer - its run's end (cancelled while waited), p99",
            "s",
            percentile(at_end, 99),
            1.0,
            Target("<=", 1.0),
        ),
        Row("answers more than 1 s off", "waits", len(late), max(len(answered), 1), Target("<=", 0.0)),
        Row("API memory per wait held", "KiB", per_wait / 1024, per_wait / 1024),
    ]
    return Section(
        title=(
            f"14. capacity: {params.waits:,} concurrent waits on one API process (locust, "
            f"{params.spawn_rate}/s), half GET /v1/runs/{{id}}/wait, half waiting sessions_send, "
            f"{params.timeout_s:g} s each"
        ),
        measured_label="clawbus",
        baseline_label="bound",
        rows=rows,
        notes=[
            f"API RSS {idle_rss / MIB:,.0f} MiB before the waits, {peak_rss / MIB:,.0f} MiB with {held:,} "
            "held",
            f"{params.cancelled} runs cancelled while waited on: their waits answered "
            f"{percentile(at_end, 50):.3f} s (p50) after the cancel",
            "answer - deadline by kind, p50 / p99: "
            + ", ".join(
                f"{kind} {percentile(d, 50):.2f} / {percentile(d, 99):.2f} s"
                for kind, d in by_kind.items()
                if d
            ),
            f"the API's own time of a timed-out wait, mean: {server_timeout_s:.3f} s for "
            f"{params.timeout_s:g} s asked (the rest of the lateness is before the wait starts or after "
            "it answers)",
            "answers by kind, HTTP status and result status: "
            + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
        ],
        details={"statuses": statuses, "heldAtOnce": held, "idleRss": idle_rss, "peakRss": peak_rss},
    )
