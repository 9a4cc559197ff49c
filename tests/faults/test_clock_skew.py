"""Hosts whose clocks are off keep leases, deadlines, run timeouts and the reaper right (issue 37): worker-a's
host runs 30 s ahead and worker-b's 30 s behind (tests/support/skewed_clock.py), a minute apart, while Redis,
beat and the API keep the true time. Every process counts time from Redis's clock (shared/store/
server_clock.py), so neither worker's reaper sees the other's live leases as lapsed (a lease is 6 s, far less
than the skew), neither takes a run over, and what they write down is on one clock.

Before, each host's wall clock was "now": the runs' times were written 30 s off, and beat's reaper passes,
sent with an expiry worker-a judged by its own clock, were all dropped there as expired (a fleet of workers
ahead of beat reaped nothing) (docs/reliability.md, "Clock skew").
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from clawbus_client import Client
from clawbus_client.models import Run, SpawnResult

from tests.support import hosts, skewed_clock, takeovers
from tests.support.exchanges import requester
from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN

SKEW_S = 30
RUN_TIMEOUT_S = 3
# How far a time written by a worker may be from the test's clock (Redis's host's) when it is read: a
# poll's interval and the monotonic clocks' drift, far less than the skew.
SLACK_MS = 2_000


@pytest.fixture
def skewed(network: hosts.Network, roles: list[Role], tmp_path: Path) -> takeovers.World:
    reason = skewed_clock.unavailable()
    if reason:
        pytest.skip(f"clock skew tests need a wall-clock shim: {reason}")
    for offset in (SKEW_S, -SKEW_S):
        assert abs(skewed_clock.offset_seen(offset) - offset) < 1, "the shim did not move the clock"
    clocks = (skewed_clock.env(SKEW_S), skewed_clock.env(-SKEW_S))
    return takeovers.start(network, roles, tmp_path, clocks)


def test_hosts_a_minute_apart_keep_leases_timeouts_and_the_reaper_right(skewed: takeovers.World) -> None:
    started_ms = time.time_ns() // 1_000_000
    with Client(skewed.url, TOKEN) as client:
        # Ten runs of 8 s under 6 s leases, five on each worker, a reaper pass every second on either.
        sent = takeovers.running(client, "skewed")
        ended = wait_for(lambda: takeovers.all_ended(client, sent), 60, what="every run ended")
        assert [run.attempts for run in ended] == [1] * takeovers.RUNS, "a live lease was taken over"
        takeovers.check_ended_once(client, skewed.redis_url, sent, taken=[])
        for run in ended:
            _on_the_true_clock(run, started_ms)
        for worker in (skewed.a, skewed.b):
            assert "its lane stalled" not in worker.output(), "the reaper re-dispatched a live run"
            # A pass with an expiry set by beat's clock would look expired to worker-a and be dropped.
            assert "Discarding revoked task" not in worker.output(), "a reaper pass was dropped"

        # A run timeout is kept to its length on whichever host the run is: a child of the slow agent
        # (8 s steps) with a 3 s timeout ends timed out 3 s after it started.
        caller, _peer = requester(client)
        child = SpawnResult.model_validate(
            client.invoke(
                "sessions_spawn",
                {"task": "take your time", "agentId": "slow", "runTimeoutSeconds": RUN_TIMEOUT_S},
                caller=caller,
            )
        )
        run = wait_for(lambda: _ended(client, child.run_id), 30, what="the child's run ended")
        assert run.status == "timeout"
        _on_the_true_clock(run, started_ms)
        assert run.started_at is not None
        assert run.ended_at is not None
        assert RUN_TIMEOUT_S * 1000 <= run.ended_at - run.started_at <= RUN_TIMEOUT_S * 1000 + SLACK_MS


def _ended(client: Client, run_id: str) -> Run | None:
    run = client.get_run(run_id)
    return run if run.status.terminal else None


def _on_the_true_clock(run: Run, since_ms: int) -> None:
    """The run's times, written by a skewed worker, lie between ``since_ms`` and now on the true clock."""
    now_ms = time.time_ns() // 1_000_000
    assert run.started_at is not None
    assert run.ended_at is not None
    assert since_ms - SLACK_MS <= run.started_at <= run.ended_at <= now_ms + SLACK_MS, (
        f"run {run.run_id}'s times are {(run.ended_at - now_ms) / 1000:+.1f} s off the true clock"
    )
