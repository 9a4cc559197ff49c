"""The live port: what an API process's requests that stay open ask of storage (docs/architecture.md, "The
map: layers and ports"). A run's completion signals on one pub/sub connection, reads of runs while a
request waits, and the event streams of runs, sessions and outboxes followed as they grow.

``shared.store.live.LiveStore`` implements it on Redis; the API's composition root (``api/services.py``)
builds it, and ``api.waits`` and ``api.streams`` know only this port.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.wire.models import Run


class SignalsLost(ClawbusError):
    """The pub/sub connection dropped; reading again reconnects it."""


@dataclass(frozen=True, slots=True)
class Subscribed:
    run_id: str


@dataclass(frozen=True, slots=True)
class Ended:
    run_id: str
    # The terminal run as the commit published it; None: read the run instead.
    run: Run | None


@dataclass(frozen=True, slots=True)
class Reconnected:
    """Every subscription is in force again: runs that ended while the connection was down were not heard."""


Signal = Subscribed | Ended | Reconnected


# A stream entry: its id (the cursor after it) and its fields.
Entry = tuple[str, dict[str, str]]


# The cursor before a stream's first entry.
FIRST = "0-0"


# A cursor as clients hand it back (an event id): a Redis stream id, two unsigned 64-bit numbers. Nineteen
# digits always fit 64 bits (twenty may not), and a pattern says so in the schema, where a check of the
# value could not.
CURSOR_PATTERN = r"^\d{1,19}-\d{1,19}$"


class Signals(Protocol):
    """One pub/sub connection of run-done signals; one task reads it (``receive``), and that task alone
    reconnects it."""

    async def open(self, home: str) -> None: ...

    async def close(self) -> None: ...

    async def subscribe(self, run_id: str) -> bool:
        """False: the connection is down; the reader's reconnect subscribes again."""
        ...

    async def unsubscribe(self, run_id: str) -> bool: ...

    def subscribed(self) -> set[str]: ...

    async def receive(self) -> Signal | None: ...


class SessionEvents(Protocol):
    """The events of one session's runs, each run followed from its acceptance to its ``ended`` event."""

    def add(self, run_id: str) -> None: ...

    async def next(self, block_ms: int | None) -> list[tuple[str, Entry]]:
        """Events of the session's runs, as (run id, entry), waiting up to ``block_ms`` for any."""
        ...


class Live(Protocol):
    async def close(self) -> None: ...

    async def read_run(self, run_id: str) -> Run | None: ...

    async def read_runs(self, run_ids: list[str]) -> list[Run | None]: ...

    async def run_events(self, run_id: str, after: str | None, count: int) -> list[Entry]:
        """The run's events after the stream id ``after`` (from the start without one), oldest first."""
        ...

    async def outbox_end(self, channel: str, to: str) -> str: ...

    async def follow_outbox(self, channel: str, to: str, cursor: str, block_ms: int) -> list[Entry]: ...

    async def follow_run(self, run_id: str, cursor: str | None, block_ms: int | None) -> list[Entry]: ...

    async def follow_session(self, session_key: str) -> SessionEvents: ...

    async def workers_alive(self) -> int: ...

    def signals(self) -> Signals: ...
