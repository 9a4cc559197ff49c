"""Wall-clock time in milliseconds (OpenClaw's unit), behind a seam so tests can move time. A running
process reads Redis's clock (``shared.store.server_clock``), not its host's."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class FixedClock:
    """A clock that moves only when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.value = start_ms

    def now_ms(self) -> int:
        return self.value

    def advance(self, seconds: float) -> None:
        self.value += int(seconds * 1000)
