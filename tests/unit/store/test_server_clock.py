"""A process's "now" is Redis's clock counted on with the host's monotonic clock, never the host's wall
clock (shared/store/server_clock.py)."""

from __future__ import annotations

import time
from typing import Any, cast

import fakeredis
import pytest
from redis import Redis

from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.server_clock import RETRY_S, ServerClock

REDIS_TIME = (1_800_000_000, 250_000)  # what TIME answers: seconds, microseconds
REDIS_MS = 1_800_000_000_250


class RedisTime:
    """Answers TIME with a set value, or fails as the store's client does while Redis is away."""

    def __init__(self) -> None:
        self.answer = REDIS_TIME
        self.away = False
        self.reads = 0

    def time(self) -> tuple[int, int]:
        self.reads += 1
        if self.away:
            raise StoreUnavailable("Redis is away")
        return self.answer


class Monotonic:
    def __init__(self) -> None:
        self.value = 100.0

    def __call__(self) -> float:
        return self.value


def clock_on(redis: RedisTime, mono: Monotonic, resync_s: float = 60.0) -> ServerClock:
    return ServerClock(cast(Redis, redis), resync_s=resync_s, monotonic=mono)


def test_now_is_redis_time_counted_on_with_the_monotonic_clock() -> None:
    redis, mono = RedisTime(), Monotonic()
    clock = clock_on(redis, mono)
    assert clock.now_ms() == REDIS_MS
    mono.value += 2.5
    assert clock.now_ms() == REDIS_MS + 2500
    assert redis.reads == 1


def test_the_hosts_wall_clock_is_never_read_once_redis_answered(monkeypatch: pytest.MonkeyPatch) -> None:
    redis, mono = RedisTime(), Monotonic()
    clock = clock_on(redis, mono)
    clock.now_ms()

    def skewed() -> Any:
        raise AssertionError("the host's wall clock was read")

    monkeypatch.setattr(time, "time_ns", skewed)
    monkeypatch.setattr(time, "time", skewed)
    mono.value += 1
    assert clock.now_ms() == REDIS_MS + 1000


def test_redis_is_read_again_after_the_resync_interval() -> None:
    redis, mono = RedisTime(), Monotonic()
    clock = clock_on(redis, mono, resync_s=60)
    clock.now_ms()
    mono.value += 59
    clock.now_ms()
    assert redis.reads == 1
    redis.answer = (REDIS_TIME[0] + 70, REDIS_TIME[1])  # Redis's clock ran 11 s ahead of this host's
    mono.value += 2
    assert clock.now_ms() == REDIS_MS + 70_000
    assert redis.reads == 2


def test_a_failed_reading_counts_on_from_the_last_one_and_is_tried_again_soon() -> None:
    redis, mono = RedisTime(), Monotonic()
    clock = clock_on(redis, mono, resync_s=10)
    clock.now_ms()
    redis.away = True
    mono.value += 10
    assert clock.now_ms() == REDIS_MS + 10_000
    mono.value += RETRY_S / 2
    clock.now_ms()
    assert redis.reads == 2  # not read again before RETRY_S
    redis.away = False
    mono.value += RETRY_S
    clock.now_ms()
    assert redis.reads == 3


def test_before_redis_ever_answered_the_hosts_clock_stands_in() -> None:
    redis, mono = RedisTime(), Monotonic()
    redis.away = True
    host_ms = time.time_ns() // 1_000_000
    assert abs(clock_on(redis, mono).now_ms() - host_ms) < 5_000


def test_against_a_redis_the_reading_is_within_its_round_trip() -> None:
    client = fakeredis.FakeRedis()
    seconds, micros = client.time()
    before_ms = seconds * 1000 + micros // 1000
    now = ServerClock(client).now_ms()
    seconds, micros = client.time()
    assert before_ms <= now <= seconds * 1000 + micros // 1000 + 1
