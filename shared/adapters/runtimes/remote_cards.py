"""The agent cards of remote A2A agents, kept a while in each worker process (docs/contract.md §12): a card
says how to reach its agent and seldom changes, so a step does not fetch it again before every message.
A step that cannot reach its remote forgets the card, so the next one asks for it anew."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from a2a.types import AgentCard

CARD_TTL_S = 300.0


class RemoteCards:
    def __init__(self, ttl_s: float = CARD_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s, self._clock = ttl_s, clock
        self._lock = threading.Lock()  # a worker's threads run steps at once
        self._cards: dict[str, tuple[float, AgentCard]] = {}

    def get(self, url: str) -> AgentCard | None:
        """The card fetched from ``url`` within the time to live, else None."""
        with self._lock:
            kept = self._cards.get(url)
            if kept is None or self._clock() - kept[0] > self._ttl_s:
                self._cards.pop(url, None)
                return None
            return kept[1]

    def put(self, url: str, card: AgentCard) -> None:
        with self._lock:
            self._cards[url] = (self._clock(), card)

    def forget(self, url: str) -> None:
        with self._lock:
            self._cards.pop(url, None)


CARDS = RemoteCards()
