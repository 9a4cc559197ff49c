"""Redis's clock, read on this host: the one clock every process of a fleet agrees on.

Leases, wait and run deadlines, collect windows and the reaper compare times written by different hosts,
so a host whose wall clock is off (30 s ahead, say) would take over leases that are still live, or leave
dead ones alone. Each process instead reads Redis's ``TIME`` now and then and counts on from it with its
own monotonic clock, so its wall clock is never used, and a step of it (NTP, a suspended VM) changes
nothing (docs/reliability.md, "Clock skew").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from redis import Redis

from clawbus.shared.ports.storage import StoreUnavailable

log = logging.getLogger(__name__)

# How long a reading of Redis's clock is counted on from: monotonic clocks drift a few ppm (milliseconds
# a day), so a minute is plenty; reading again costs one TIME a minute a process.
RESYNC_S = 60.0
# After a failed reading (Redis away): when to try again. Until the first reading succeeds the host's
# wall clock stands in; whatever needed the time is about to fail on the same Redis anyway.
RETRY_S = 1.0


class ServerClock:
    def __init__(
        self,
        redis: Redis,
        resync_s: float = RESYNC_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._redis = redis
        self._resync_s = resync_s
        self._monotonic = monotonic
        # (Redis's time in ms, this host's monotonic seconds at that moment); read and replaced whole, so
        # threads need no lock.
        self._anchor: tuple[float, float] | None = None
        self._next_sync = 0.0

    def now_ms(self) -> int:
        mono = self._monotonic()
        if mono >= self._next_sync:
            self._sync(mono)
        anchor = self._anchor
        if anchor is None:
            return time.time_ns() // 1_000_000
        server_ms, at = anchor
        return int(server_ms + (mono - at) * 1000)

    def _sync(self, mono: float) -> None:
        try:
            before = self._monotonic()
            seconds, micros = self._redis.time()
            after = self._monotonic()
        except StoreUnavailable as exc:
            self._next_sync = mono + RETRY_S
            log.warning("reading Redis's clock failed (%s); counting on from the last reading", exc)
            return
        # Redis read its clock somewhere in the round trip: its middle is off by at most half of it.
        self._anchor = (seconds * 1000 + micros / 1000, (before + after) / 2)
        self._next_sync = after + self._resync_s
