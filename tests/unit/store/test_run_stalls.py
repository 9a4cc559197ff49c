"""shared/store/runs.py's stall watchdog (``watch_stalls``, ``stalled``, watch_stalls.lua) and the scripts
that restart a run's progress clock (claim, add_event, memoize) or forget it (commit, heartbeat's re-adding):
a run whose lease is renewed but that makes no progress for the bound is recorded and counted once, and
leaves the record when it makes progress, ends, or loses or parks its lease."""

from __future__ import annotations

import json

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.store import Store
from tests.support.replies import reply_lost
from tests.support.runs import KEY, LEASE_MS, accept, claim, ok

BOUND_MS = 10_000


def renewed_for(store: Store, clock: FixedClock, token: str, seconds: float, key: str = KEY) -> None:
    """The worker keeps the lease: a renewal every second for ``seconds``."""
    for _ in range(int(seconds)):
        clock.advance(1)
        assert store.runs.heartbeat(key, token, LEASE_MS)


def stalls_counted(store: Store) -> int:
    return int(store.redis.get(store.keys.metrics_run_stalls()) or 0)


def stalled_run(store: Store, config: Config, clock: FixedClock) -> tuple[str, str]:
    """A run claimed, then renewed past the bound without progress, and reported: its id and token."""
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    renewed_for(store, clock, token, BOUND_MS / 1000 + 1)
    assert [run.run_id for run in store.runs.watch_stalls(BOUND_MS).fresh] == [accepted.run_id]
    return accepted.run_id, token


def test_a_run_renewed_without_progress_past_the_bound_is_reported_once_with_its_owner_and_since(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    claimed_at = clock.now_ms()
    token = claim(store, accepted.run_id, owner="task-7").token
    renewed_for(store, clock, token, BOUND_MS / 1000)
    assert store.runs.watch_stalls(BOUND_MS).fresh == []  # at the bound, not past it
    renewed_for(store, clock, token, 1)
    found = store.runs.watch_stalls(BOUND_MS)
    assert found.now == 1
    [stalled] = found.fresh
    assert (stalled.run_id, stalled.session_key, stalled.since) == (accepted.run_id, KEY, claimed_at)
    assert (stalled.owner, stalled.attempt) == ("task-7", 1)
    assert stalls_counted(store) == 1
    # Still stalled at the next passes: listed, not reported or counted again.
    renewed_for(store, clock, token, 5)
    again = store.runs.watch_stalls(BOUND_MS)
    assert (again.now, again.fresh) == (1, [])
    assert store.runs.stalled() == [stalled]
    assert stalls_counted(store) == 1


@pytest.mark.parametrize("progress", ["event", "memo"])
def test_progress_clears_a_stall_at_once_and_restarts_the_clock(
    store: Store, config: Config, clock: FixedClock, progress: str
) -> None:
    run_id, token = stalled_run(store, config, clock)
    if progress == "event":
        store.runs.add_event(run_id, {"type": "text", "text": "at last"})
    else:
        run = store.runs.get(run_id)
        assert run is not None
        assert store.runs.memoize(run, token, '{"steps": 1}')
    assert store.runs.stalled() == []  # at once, not at the next pass
    progressed_at = clock.now_ms()
    renewed_for(store, clock, token, BOUND_MS / 1000)
    assert store.runs.watch_stalls(BOUND_MS).now == 0
    # Silent again past the bound: a stall of its own, since the progress, counted again.
    renewed_for(store, clock, token, 1)
    [again] = store.runs.watch_stalls(BOUND_MS).fresh
    assert again.since == progressed_at
    assert stalls_counted(store) == 2


def test_a_stalled_run_that_ends_leaves_the_record_and_the_watch(
    store: Store, config: Config, clock: FixedClock
) -> None:
    run_id, token = stalled_run(store, config, clock)
    assert ok(store, run_id, token).committed
    assert store.runs.stalled() == []
    assert store.redis.zcard(store.keys.runs_progress()) == 0
    assert stalls_counted(store) == 1


@pytest.mark.parametrize("progress", ["event", "claim", "commit"])
def test_a_stall_is_said_on_the_runs_hash_until_the_run_moves(
    store: Store, config: Config, clock: FixedClock, progress: str
) -> None:
    """The hot path's scripts read the run's hash anyway: they delete a record only where it says so."""
    run_id, token = stalled_run(store, config, clock)
    assert store.redis.hget(store.keys.run(run_id), "stalled") == "1"
    if progress == "event":
        store.runs.add_event(run_id, {"type": "text", "text": "at last"})
    elif progress == "claim":
        clock.advance(LEASE_MS / 1000 + 1)  # the lease lapses: another attempt claims the run
        claim(store, run_id, owner="task-2", attempt=1)
    else:
        assert ok(store, run_id, token).committed
    assert store.runs.stalled() == []
    assert store.redis.hget(store.keys.run(run_id), "stalled") is None


def test_a_record_of_a_run_no_longer_followed_goes_at_the_next_pass(
    store: Store, config: Config, clock: FixedClock
) -> None:
    """One recorded before the run's hash said so, and left by a commit that found no mark."""
    run_id, token = stalled_run(store, config, clock)
    store.redis.hdel(store.keys.run(run_id), "stalled")
    assert ok(store, run_id, token).committed
    assert [run.run_id for run in store.runs.stalled()] == [run_id]
    assert store.runs.watch_stalls(BOUND_MS).now == 0
    assert store.runs.stalled() == []


def test_a_run_whose_lease_lapsed_is_not_stalled_and_is_followed_again_from_its_next_renewal(
    store: Store, config: Config, clock: FixedClock
) -> None:
    """A worker dead (or cut off) renews nothing: the reaper re-dispatches its run, and the watchdog leaves
    it alone. The same worker back before anyone took the run over renews the lease again: from then on it
    is watched, from that renewal (a renewal is not progress, but the time before it was not watched)."""
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    clock.advance(BOUND_MS / 1000 + 1)  # no renewal: the lease lapsed long ago
    found = store.runs.watch_stalls(BOUND_MS)
    assert (found.now, found.fresh) == (0, [])
    assert store.redis.zcard(store.keys.runs_progress()) == 0
    assert store.runs.heartbeat(KEY, token, LEASE_MS)
    renewed_at = clock.now_ms()
    renewed_for(store, clock, token, BOUND_MS / 1000)
    assert store.runs.watch_stalls(BOUND_MS).fresh == []
    renewed_for(store, clock, token, 1)
    [stalled] = store.runs.watch_stalls(BOUND_MS).fresh
    assert stalled.since == renewed_at


def test_a_stalled_run_whose_lease_lapses_leaves_the_record(
    store: Store, config: Config, clock: FixedClock
) -> None:
    _run_id, _token = stalled_run(store, config, clock)
    clock.advance(LEASE_MS / 1000 + 1)  # its worker stopped renewing
    assert store.runs.watch_stalls(BOUND_MS).now == 0
    assert store.runs.stalled() == []


def test_a_retried_attempts_claim_is_progress(store: Store, config: Config, clock: FixedClock) -> None:
    run_id, _token = stalled_run(store, config, clock)
    retried = claim(store, run_id, attempt=1)  # the pool child died; Celery retried the task
    assert store.runs.stalled() == []
    renewed_for(store, clock, retried.token, BOUND_MS / 1000 + 1)
    [stalled] = store.runs.watch_stalls(BOUND_MS).fresh
    assert stalled.attempt == 2


def test_a_parked_run_is_not_stalled(store: Store, config: Config, clock: FixedClock) -> None:
    """A run parked for model capacity or waiting on another run holds no renewed lease: it is waiting,
    not stuck, however long."""
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    run = store.runs.get(accepted.run_id)
    assert run is not None
    store.runs.park(run, token, "{}", clock.now_ms() + 10 * BOUND_MS)
    clock.advance(BOUND_MS / 1000 + 1)
    assert store.runs.watch_stalls(BOUND_MS).fresh == []
    assert store.redis.zcard(store.keys.runs_progress()) == 0


def test_the_watchdog_off_reports_nothing_and_drops_what_it_had_reported(
    store: Store, config: Config, clock: FixedClock
) -> None:
    _run_id, token = stalled_run(store, config, clock)
    renewed_for(store, clock, token, 120)
    off = store.runs.watch_stalls(0)
    assert (off.now, off.fresh) == (0, [])
    assert store.runs.stalled() == []


def test_the_watchdog_off_still_forgets_runs_that_lost_their_lease(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    claim(store, accepted.run_id)
    clock.advance(61)
    store.runs.watch_stalls(0)
    assert store.redis.zcard(store.keys.runs_progress()) == 0


def test_stalled_runs_are_listed_the_longest_stalled_first(
    store: Store, config: Config, clock: FixedClock
) -> None:
    keys = [f"agent:main:cron:stall-{i}" for i in range(3)]
    tokens = []
    for key in keys:
        tokens.append(claim(store, accept(store, config, key=key).run_id, key=key).token)
        clock.advance(1)
    for _ in range(int(BOUND_MS / 1000) + 1):
        clock.advance(1)
        for key, token in zip(keys, tokens, strict=True):
            assert store.runs.heartbeat(key, token, LEASE_MS)
    assert store.runs.watch_stalls(BOUND_MS).now == 3
    listed = store.runs.stalled()
    assert [run.session_key for run in listed] == keys
    assert [run.session_key for run in store.runs.stalled(limit=2)] == keys[:2]
    record = json.loads(store.redis.hget(store.keys.runs_stalled(), listed[0].run_id) or "{}")
    assert set(record) == {"sessionKey", "since", "owner", "attempt"}


def test_a_watch_sent_again_after_its_reply_was_lost_marks_and_counts_nothing_twice(
    store: Store, config: Config, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    renewed_for(store, clock, token, BOUND_MS / 1000 + 1)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    found = store.runs.watch_stalls(BOUND_MS)
    monkeypatch.undo()
    assert found.now == 1  # the repeat's answer: recorded already, so not newly stalled
    assert stalls_counted(store) == 1
    assert [run.run_id for run in store.runs.stalled()] == [accepted.run_id]


def test_progress_scripts_sent_again_after_their_reply_was_lost_still_clear_the_stall(
    store: Store, config: Config, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, _token = stalled_run(store, config, clock)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    store.runs.add_event(run_id, {"type": "text", "text": "once"})
    monkeypatch.undo()
    assert [e.get("text") for e in store.runs.events(run_id)].count("once") == 1
    assert store.runs.stalled() == []
