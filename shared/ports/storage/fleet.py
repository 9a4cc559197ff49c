"""The fleet's figures: what is queued, running and stalled.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from clawbus.shared.wire.models import FleetFigures, InFlight


class Fleet(Protocol):
    """What the whole fleet is doing, and its workers' liveness."""

    def figures(self, queues: Sequence[str]) -> FleetFigures:
        """One round trip for the counters and depths; the heartbeat keys take a SCAN (one per worker)."""

    def in_flight(self, limit: int) -> InFlight:
        """Up to ``limit`` sessions with a run queued or running, each with its lane, and up to ``limit``
        flows in progress, soonest due first; two round trips."""

    def mark_alive(self, hostname: str, ttl_seconds: int) -> None:
        """A worker is consuming: its heartbeat key, which lapses unless refreshed within ``ttl_seconds``."""

    def mark_gone(self, hostname: str) -> None: ...

    def count_dropped(self, policy: str, count: int) -> None:
        """Chat messages a full session queue dropped (``messages.queue.drop``), for the metrics."""

    def server_changed(self) -> bool:
        """Whether the Redis server answering is another one (or another start of it) than the one this
        was last asked of. The first ask records it and says no (nothing came before it); only one of
        several askers at once hears the change."""

    def take_turn(self, task: str, for_ms: int) -> bool:
        """Whether this pass of a maintenance ``task`` is the one to run: no other took its turn in the
        last ``for_ms``, by the store's clock."""

    def reaper_ran_at(self) -> int | None: ...
