"""shared/store/leases.py: a lease held for as long as its block runs, and no longer than its time to live
after its holder is gone."""

from __future__ import annotations

import threading

import fakeredis

from clawbus.api.processes import wait_for
from clawbus.shared.store.leases import held_lease
from clawbus.shared.store.scripts import Scripts

KEY = "lease:test"
TTL_MS = 300


def test_a_lease_outlives_its_time_to_live_while_its_block_runs() -> None:
    redis = fakeredis.FakeRedis(decode_responses=True)
    scripts = Scripts(redis)
    with held_lease(redis, scripts, KEY, TTL_MS) as ours:
        assert ours
        holder = redis.get(KEY)
        threading.Event().wait(3 * TTL_MS / 1000)  # the block's work, three times the time to live
        assert redis.get(KEY) == holder
        with held_lease(redis, scripts, KEY, TTL_MS) as theirs:
            assert not theirs
    assert redis.get(KEY) is None  # released at the end, not left to lapse


def test_the_lease_of_a_holder_that_died_lapses_within_its_time_to_live() -> None:
    redis = fakeredis.FakeRedis(decode_responses=True)
    scripts = Scripts(redis)
    redis.set(KEY, "dead holder", px=TTL_MS)  # taken, and nobody renews it
    with held_lease(redis, scripts, KEY, TTL_MS) as ours:
        assert not ours
    wait_for(lambda: redis.get(KEY) is None, TTL_MS / 1000 + 1, what="the dead holder's lease to lapse")
    with held_lease(redis, scripts, KEY, TTL_MS) as ours:
        assert ours


def test_a_lease_taken_over_after_it_lapsed_stays_the_new_holders() -> None:
    redis = fakeredis.FakeRedis(decode_responses=True)
    scripts = Scripts(redis)
    with held_lease(redis, scripts, KEY, TTL_MS) as ours:
        assert ours
        redis.set(KEY, "new holder", px=60_000)  # lapsed (Redis was away) and taken meanwhile
        wait_for(lambda: redis.pttl(KEY) < 60_000 - TTL_MS, 5, what="a renewal's chance to come and go")
        assert redis.pttl(KEY) > TTL_MS  # not renewed as the old holder's (to its time to live)
    assert redis.get(KEY) == "new holder"  # the old holder's release leaves it alone
