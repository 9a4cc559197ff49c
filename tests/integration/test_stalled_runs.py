"""The stall watchdog (workers/reaper.py) with real processes: a model that stops sending mid-answer, its
connection open, well within ``models.streamIdleTimeoutSeconds``, while the worker keeps renewing its runs'
leases. Every run it holds is reported stalled past ``runs.stallSeconds`` (``/v1/status``, ``/metrics``,
one warning each); the runs queued behind them are not; once the model answers they end, and the report
clears.

The worker has fewer slots than there are runs, so every slot holds a stalled run: the reaper, a
maintenance task, runs on a second worker that takes only the maintenance queue (with every slot of every
worker stuck, no reaper pass runs at all; docs/architecture.md, "The stall watchdog").
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import httpx
import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

SLOTS = 2
RUNS = 4
STALL_S = 2
REAP_S = 1
ANSWER = "the answer, at last"


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    """Each answer's first chunk, then silence until released."""
    with fake_openai() as fake:
        fake.default = Reply(text=ANSWER, hold_after=1)
        yield fake


def stalled_gauge(url: str) -> float:
    scraped = httpx.get(f"{url}/metrics").text
    found = {s.name: s.value for f in text_string_to_metric_families(scraped) for s in f.samples}
    return found["clawbus_runs_stalled"]


def test_runs_whose_model_holds_its_stream_are_reported_stalled_and_clear_once_it_answers(
    fresh: Fresh, model: FakeOpenAI
) -> None:
    fresh.start_redis(
        config={
            "agents": {"list": [{"id": "main", "default": True}, {"id": "gpt", "model": "fake/gpt"}]},
            "models": {
                # Far longer than the test: the stream's own timeout is not what ends the stall.
                "streamIdleTimeoutSeconds": 120,
                "providers": {"fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt"]}},
            },
            "runs": {
                "leaseSeconds": 3,
                "dispatchGraceSeconds": 30,
                "reapIntervalSeconds": REAP_S,
                "stallSeconds": STALL_S,
            },
        }
    )
    runner = fresh.worker(concurrency=SLOTS, queues="runs,nested,subagent,delivery")
    reaper = fresh.worker(concurrency=1, queues="maintenance")
    fresh.beat()
    _, url = fresh.api()
    redis = fresh.redis_server.client() if fresh.redis_server else None
    assert redis is not None

    def server_ms() -> int:
        seconds, micros = redis.time()
        return seconds * 1000 + micros // 1000

    with Client(url, TOKEN) as client:
        run_ids = []
        for i in range(RUNS):
            sent = client.post_message(f"agent:gpt:cron:stall-{i}", f"question {i}", timeout_seconds=0)
            assert isinstance(sent, SendResult)
            run_ids.append(sent.run_id)
        wait_for(lambda: model.holding == SLOTS, 30, what="every worker slot's model stream held")
        held = {run_id for run_id in run_ids if client.get_run(run_id).status == "running"}
        assert len(held) == SLOTS

        # How long past its last progress each run was first listed (the status polled every 0.1 s).
        listed_after: dict[str, float] = {}

        def all_listed() -> bool:
            status = client.status()
            now = server_ms()
            for run in status.stalled_runs:
                listed_after.setdefault(run.run_id, (now - run.since) / 1000)
            return status.runs_stalled == SLOTS

        wait_for(all_listed, STALL_S + 10 * REAP_S, interval=0.1, what="the held runs reported stalled")
        status = client.status()
        assert {run.run_id for run in status.stalled_runs} == held  # the queued runs are not stalled
        assert {run.session_key for run in status.stalled_runs} <= {
            f"agent:gpt:cron:stall-{i}" for i in range(RUNS)
        }
        assert all(run.owner and run.attempt == 1 for run in status.stalled_runs)
        assert status.run_stalls == SLOTS
        assert stalled_gauge(url) == SLOTS
        assert all(STALL_S <= after <= STALL_S + 2 * REAP_S + 1 for after in listed_after.values()), (
            listed_after
        )

        released_at = server_ms()
        model.release()
        ended = [client.wait_run(run_id, timeout=30) for run_id in run_ids]
        assert [run.status if run else None for run in ended] == ["ok"] * RUNS
        assert all(run.reply == ANSWER for run in ended if run)
        status = client.status()
        assert (status.runs_stalled, status.stalled_runs) == (0, [])
        assert status.run_stalls == SLOTS  # the runs after them were never stalled
        assert stalled_gauge(url) == 0
        cleared_s = (
            max(run.ended_at or 0 for run in ended if run and run.run_id in held) - released_at
        ) / 1000

    warnings = [line for line in reaper.output().splitlines() if "has made no progress" in line]
    assert sorted(run_id for run_id in held for line in warnings if run_id in line) == sorted(held)
    assert len(warnings) == SLOTS  # one each, not one a pass
    assert "has made no progress" not in runner.output()
    print(
        f"stalled runs listed {min(listed_after.values()):.2f}-{max(listed_after.values()):.2f} s after their "
        f"last progress (bound {STALL_S} s, a pass every {REAP_S} s); held runs ended {cleared_s:.2f} s "
        "after the release",
        file=sys.stderr,
    )
