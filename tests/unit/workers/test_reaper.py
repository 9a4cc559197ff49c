"""workers/reaper.py's stall watchdog: a pass reports each run newly stalled (its lease renewed, no progress
for ``runs.stallSeconds``) with one warning, keeps quiet about it at the next passes, and counts it; a run
that goes on leaves the report; reporting never stops a run."""

from __future__ import annotations

import logging

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.workers import reaper
from clawbus.workers.services import WorkerContext
from clawbus.workers.testing import InlineDispatcher
from tests.conftest import make_config
from tests.support.runs import KEY, LEASE_MS, accept, claim, ok

STALL_SECONDS = 10


@pytest.fixture
def config() -> Config:
    return make_config({"runs": {"stallSeconds": STALL_SECONDS}})


@pytest.fixture
def passes(
    config: Config, store: Store, dispatcher: InlineDispatcher, monkeypatch: pytest.MonkeyPatch
) -> WorkerContext:
    monkeypatch.setattr(store.fleet, "server_changed", lambda: False)  # fakeredis has no INFO
    return WorkerContext(config, store, dispatcher, follow_inline=False)


def renewed_for(store: Store, clock: FixedClock, token: str, seconds: int) -> None:
    """``seconds`` pass with the lease renewed every second, or every minute over whole minutes (an hour of
    renewals a second is 3,600 script calls; the last renewal is what keeps the lease live at a pass)."""
    step = 60 if seconds % 60 == 0 else 1
    for _ in range(seconds // step):
        clock.advance(step)
        assert store.runs.heartbeat(KEY, token, LEASE_MS)


def stall_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "no progress" in r.getMessage()
    ]


def test_a_pass_warns_once_per_newly_stalled_run_and_counts_it(
    passes: WorkerContext, store: Store, config: Config, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id, owner="task-9").token
    renewed_for(store, clock, token, STALL_SECONDS)
    with caplog.at_level(logging.WARNING, logger=reaper.__name__):
        reaper.reap(passes)
        assert stall_warnings(caplog) == []
        renewed_for(store, clock, token, 2)
        reaper.reap(passes)
        [warning] = stall_warnings(caplog)
        assert warning == (
            f"run {accepted.run_id} of {KEY} has made no progress for 12 s while its lease is renewed "
            f"(runs.stallSeconds 10; lease owner task-9, attempt 1): reported, not stopped"
        )
        renewed_for(store, clock, token, 5)
        reaper.reap(passes)
        assert len(stall_warnings(caplog)) == 1  # still stalled: not again
    figures = store.fleet.figures([])
    assert (figures.runs_stalled, figures.run_stalls) == (1, 1)
    # Reported, not stopped: the run still holds its lease, and its commit goes through.
    run = store.runs.get(accepted.run_id)
    assert run is not None
    assert run.status.value == "running"
    assert ok(store, accepted.run_id, token).committed
    reaper.reap(passes)
    figures = store.fleet.figures([])
    assert (figures.runs_stalled, figures.run_stalls) == (0, 1)


def test_a_stalled_run_that_goes_on_leaves_the_report_and_is_warned_of_again_if_it_stalls_again(
    passes: WorkerContext, store: Store, config: Config, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    renewed_for(store, clock, token, STALL_SECONDS + 1)
    with caplog.at_level(logging.WARNING, logger=reaper.__name__):
        reaper.reap(passes)
        store.runs.add_event(accepted.run_id, {"type": "text", "text": "going on"})
        reaper.reap(passes)
        assert store.fleet.figures([]).runs_stalled == 0
        renewed_for(store, clock, token, STALL_SECONDS + 1)
        reaper.reap(passes)
    assert len(stall_warnings(caplog)) == 2
    assert store.fleet.figures([]).run_stalls == 2


def test_the_watchdog_off_reports_nothing(
    store: Store, dispatcher: InlineDispatcher, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = make_config({"runs": {"stallSeconds": 0}})
    monkeypatch.setattr(store.fleet, "server_changed", lambda: False)
    accepted = accept(store, off)
    token = claim(store, accepted.run_id).token
    renewed_for(store, clock, token, 3600)
    reaper.reap(WorkerContext(off, store, dispatcher, follow_inline=False))
    assert store.fleet.figures([]).runs_stalled == 0
