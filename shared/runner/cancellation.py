"""Cancelling runs that a worker is running: one listener thread per worker process hears the cancel
channel and sets the signal of each run it executes; the run's model call stops at once (the runtime hangs
up on its model) and no tool call starts after it (``shared.runner.execution`` commits what it has,
``aborted``).

A cancel announced while the listener was (re)subscribing is not lost: on every subscription the
``cancelRequested`` mark of each watched run is read, and an attempt starts from the mark its claim read.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from clawbus.shared.ports.runtime import CancelSignal
from clawbus.shared.ports.storage import Storage

log = logging.getLogger(__name__)


# How long a heard cancel is remembered for a run this process does not run yet: it may have claimed the
# run an instant before the cancel and be about to watch it.
RECENT_SECONDS = 10.0
# How long the first attempt of a process waits for the listener's first subscription.
SUBSCRIBE_WAIT_SECONDS = 2.0


class _Listener:
    def __init__(self, store: Storage) -> None:
        self.pid = os.getpid()
        self.store = store
        self.subscribed = threading.Event()
        self._lock = threading.Lock()
        self._watched: dict[str, CancelSignal] = {}
        self._recent: dict[str, float] = {}  # run id -> when its cancel was heard (monotonic)
        self._stop = threading.Event()
        threading.Thread(target=self._listen, name="clawbus-cancel-listener", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def watch(self, run_id: str, requested: bool) -> CancelSignal:
        event = CancelSignal()
        with self._lock:
            self._watched[run_id] = event
            heard = self._recent.pop(run_id, None) is not None
        if requested or heard:
            event.set()
        return event

    def _recheck(self) -> None:
        """After every subscription: what was announced while nobody listened is read from the runs."""
        with self._lock:
            watched = list(self._watched.items())
        for run_id, event in watched:
            if self.store.runs.cancel_requested(run_id):
                event.set()
        self.subscribed.set()

    def unwatch(self, run_id: str) -> None:
        with self._lock:
            self._watched.pop(run_id, None)

    def _listen(self) -> None:
        for run_id in self.store.runs.cancellations(self._recheck, self._stop):
            try:
                if run_id is None:
                    continue
                now = time.monotonic()
                with self._lock:
                    event = self._watched.get(run_id)
                    if event is None:
                        self._recent = {r: t for r, t in self._recent.items() if now - t < RECENT_SECONDS}
                        self._recent[run_id] = now
                if event is not None:
                    log.info("run %s was cancelled: stopping it", run_id)
                    event.set()
            except Exception:  # the listener must outlive any one message
                log.exception("cancel listener")


_listener: _Listener | None = None
_listener_lock = threading.Lock()


@contextmanager
def watching(store: Storage, run_id: str, requested: bool) -> Iterator[CancelSignal]:
    """An event set when ``run_id`` is cancelled, for as long as this attempt runs it. ``requested``: the
    run's own mark as its claim read it (a cancel announced before this attempt was listening)."""
    global _listener
    with _listener_lock:
        # Started lazily per process: Celery's prefork children do not inherit the parent's threads. A
        # worker has one store; a process that changes stores (tests) gets a listener on the new one.
        if _listener is None or _listener.pid != os.getpid() or _listener.store is not store:
            if _listener is not None and _listener.pid == os.getpid():
                _listener.stop()
            _listener = _Listener(store)
        listener = _listener
    event = listener.watch(run_id, requested)
    # Only a new listener waits: its first subscription rechecks the runs watched by then, this one too.
    listener.subscribed.wait(SUBSCRIBE_WAIT_SECONDS)
    try:
        yield event
    finally:
        listener.unwatch(run_id)
