"""The model traffic and budget scripts on a real redis-server, where fakeredis is more lenient: Redis
refuses ``HINCRBY`` by ``-0`` (what Lua writes for the negation of zero), so every amount that may be zero
is given back here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.domain.budgets import Limits, Spend
from clawbus.shared.domain.traffic import CallLimits
from clawbus.shared.store import Store
from tests.conftest import make_config
from tests.support.processes import RedisServer

MODEL = "fake/m"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    server = RedisServer(tmp_path / "redis").start()
    try:
        yield Store(server.client(), make_config(), FixedClock())
    finally:
        server.stop()


def _admit(store: Store, waiter: str, tokens: int = 0) -> str | None:
    return store.traffic.admit(
        MODEL,
        waiter,
        klass=0,
        flow="a",
        weight=1,
        limits=CallLimits(requests_per_minute=600, tokens_per_minute=60_000),
        tokens=tokens,
        hold_ms=60_000,
        grace_ms=1_000,
    ).ticket


def test_calls_of_no_tokens_leave_the_window_and_are_settled(store: Store) -> None:
    window, tokens, *_ = store.keys.traffic(MODEL)
    seconds, _micros = store.redis.time()
    store.redis.zadd(window, {"old#1": (int(seconds) - 120) * 1000})
    store.redis.hset(tokens, "old#1", 0)
    ticket = _admit(store, "r1")
    assert ticket is not None
    store.traffic.settle(MODEL, ticket, tokens_used=None, unsent=True)
    again = _admit(store, "r2")
    assert again is not None
    store.traffic.settle(MODEL, again, tokens_used=0, rate_limited=True, cooldown_ms=1)
    assert store.traffic.snapshot([MODEL])[0].tokens_in_window == 0


def test_a_lapsed_hold_of_an_unpriced_call_is_given_back(store: Store) -> None:
    def reserve(hold: str, now: int) -> None:
        refusal = store.budgets.reserve(
            "main", "d", None, Limits(), usd_micros=0, tokens=10, now_ms=now, hold=hold, hold_ms=1_000
        )
        assert refusal is None

    reserve("dead", 1_000)
    reserve("next", 5_000)
    store.budgets.settle("main", "d", None, "next", usd_micros=0, tokens=0)
    assert store.budgets.spent(["main"], "d")["main"] == Spend(0, 0)
