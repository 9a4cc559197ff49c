"""The lease scripts: extend_lease through the renewal of a held lease (``leases._renew``, what
``held_lease`` runs in its thread), release_lease through ``A2AStore.release_push``; a lease that lapsed
and was taken by another stays theirs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from clawbus.shared.store import Store
from clawbus.shared.store.leases import _renew
from clawbus.shared.store.scripts import Scripts

OWNER = "attempt-1"
TTL_MS = 300
LONG_MS = 60_000
RUN = "run-1"


def renewed_once(store: Store, key: str) -> list[Any]:
    """``OWNER``'s renewer of the lease on ``key`` until one renewal succeeds (then it is told to stop) or it
    stops by itself (the lease is no longer its own); the script's answers."""
    scripts = Scripts(store.redis)
    extend, answers, done = scripts.extend_lease, [], threading.Event()

    def recorded(**kwargs: Any) -> Any:
        answers.append(extend(**kwargs))
        if answers[-1]:
            done.set()
        return answers[-1]

    scripts.extend_lease = recorded
    _renew(scripts, key, OWNER, TTL_MS, done)
    return answers


# -- extend_lease --


def test_extend_lease_held_by_its_owner_sets_its_time_to_live_again(store: Store) -> None:
    key = store.keys.cold_lease("agent:main:main")
    store.redis.set(key, OWNER, px=LONG_MS)
    assert renewed_once(store, key) == [1]
    assert store.redis.get(key) == OWNER
    assert 0 < store.redis.pttl(key) <= TTL_MS


@pytest.mark.parametrize("holder", ["attempt-2", None], ids=["taken by another", "lapsed"])
def test_extend_lease_no_longer_its_owners_leaves_it_and_stops_the_renewals(
    store: Store, holder: str | None
) -> None:
    key = store.keys.cold_lease("agent:main:main")
    if holder:
        store.redis.set(key, holder, px=LONG_MS)
    assert renewed_once(store, key) == [0]
    assert store.redis.get(key) == holder
    if holder:
        assert store.redis.pttl(key) > TTL_MS  # not cut to the old owner's time to live
    else:
        assert store.redis.exists(key) == 0  # not brought back


# -- release_lease --


def test_release_lease_by_its_owner_frees_it_for_the_next_attempt(store: Store) -> None:
    assert store.a2a.claim_push(RUN, OWNER, LONG_MS)
    store.a2a.release_push(RUN, OWNER)
    assert store.redis.exists(store.keys.a2a_push_lease(RUN)) == 0
    assert store.a2a.claim_push(RUN, "attempt-2", LONG_MS)


def test_release_lease_by_another_owner_leaves_the_lease(store: Store) -> None:
    """An attempt whose lease lapsed and was taken by the next one releases nothing of the next one's."""
    assert store.a2a.claim_push(RUN, "attempt-2", LONG_MS)
    store.a2a.release_push(RUN, OWNER)
    key = store.keys.a2a_push_lease(RUN)
    assert store.redis.get(key) == "attempt-2"
    assert store.redis.pttl(key) > LONG_MS - 10_000
    assert not store.a2a.claim_push(RUN, OWNER, LONG_MS)
