"""Garbage collection in a long-lived process: an API process holding thousands of waits, a worker
running runs.

CPython's full collection walks every object the collector tracks, and stops the event loop while it does.
An API process holding 10,000 waits tracks about 1.8 million (each held request's middleware coroutines and
closures, its wait's futures): a full collection took 1.08 s there (bench figure 14), and every wait due in
that second answered that much late. Nearly all of those objects are freed by reference counting when their
request ends (the full collections of figure 14 found 0 to 115 objects to collect among 1.8 million), so
after each full collection the heap is frozen (``gc.freeze``): the next one walks only what is newer than
it. A frozen object still dies when its last reference goes; what only a reference cycle keeps waits for
the next thaw (every ``THAW_S``), which hands the whole heap back to the collector.

A worker does the same from a thread of its own, having first frozen what it built as it started (Celery,
the configuration, the clients: some 140,000 objects that live as long as the process). Until then every
full collection walked them again while a run waited: freezing them took 0.15-1.1 ms off the agent loop's
own time per model step in runs paired in one process (bench figure 6, docs/capacity.md).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable

# How long cyclic garbage may wait among frozen objects. A thaw costs one full collection over the whole
# heap (about a second at 10,000 held waits), so it is rare.
THAW_S = 600.0
# How soon after a full collection the heap is frozen.
LOOK_S = 1.0


def freeze_started_heap() -> None:
    """What the process built as it started lives as long as it does: collected once, then frozen."""
    gc.collect()
    gc.freeze()


def full_collections() -> int:
    return int(gc.get_stats()[-1]["collections"])


class FrozenHeap:
    """Freezes the heap after each full collection, thaws it every ``thaw_s``."""

    def __init__(self, thaw_s: float = THAW_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._thaw_s = thaw_s
        self._clock = clock
        self._thawed_at = clock()
        self._seen = full_collections()

    def look(self) -> None:
        """Thaw when it is time; else freeze if a full collection ran since the last look."""
        seen = full_collections()
        if self._clock() - self._thawed_at >= self._thaw_s:
            gc.unfreeze()
            self._thawed_at = self._clock()
        elif seen != self._seen:
            gc.freeze()
        self._seen = seen

    async def run(self, every_s: float = LOOK_S) -> None:
        while True:
            await asyncio.sleep(every_s)
            self.look()

    def watch(self, stop: threading.Event, every_s: float = LOOK_S) -> threading.Thread:
        """``look`` every ``every_s`` from a daemon thread until ``stop`` is set (a process without an event
        loop of its own: a worker)."""

        def looking() -> None:
            while not stop.wait(every_s):
                self.look()

        thread = threading.Thread(target=looking, name="clawbus-frozen-heap", daemon=True)
        thread.start()
        return thread
