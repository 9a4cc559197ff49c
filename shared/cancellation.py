"""Cancelling runs that a worker is running: one listener thread per worker process hears the cancel
channel and sets the event of each run it executes; the run's model call stops at its next streamed
chunk and no tool call starts after it (``shared.execution`` commits what it has, ``aborted``).

A cancel announced while the listener was (re)subscribing is not lost: on every subscription, and when a
run starts being watched, the run's own ``cancelRequested`` mark is read.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from shared.store import Store

log = logging.getLogger(__name__)


class _Listener:
    def __init__(self, store: Store) -> None:
        self.pid = os.getpid()
        self.store = store
        self._lock = threading.Lock()
        self._watched: dict[str, threading.Event] = {}
        self._stop = threading.Event()
        threading.Thread(target=self._listen, name="clawbus-cancel-listener", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def watch(self, run_id: str) -> threading.Event:
        event = threading.Event()
        with self._lock:
            self._watched[run_id] = event
        if self.store.runs.cancel_requested(run_id):
            event.set()
        return event

    def _recheck(self) -> None:
        with self._lock:
            watched = list(self._watched.items())
        for run_id, event in watched:
            if self.store.runs.cancel_requested(run_id):
                event.set()

    def unwatch(self, run_id: str) -> None:
        with self._lock:
            self._watched.pop(run_id, None)

    def _listen(self) -> None:
        for run_id in self.store.runs.cancellations(self._recheck, self._stop):
            try:
                if run_id is None:
                    continue
                with self._lock:
                    event = self._watched.get(run_id)
                if event is not None:
                    log.info("run %s was cancelled: stopping it", run_id)
                    event.set()
            except Exception:  # the listener must outlive any one message
                log.exception("cancel listener")


_listener: _Listener | None = None
_listener_lock = threading.Lock()


@contextmanager
def watching(store: Store, run_id: str) -> Iterator[threading.Event]:
    """An event set when ``run_id`` is cancelled, for as long as this attempt runs it."""
    global _listener
    with _listener_lock:
        # Started lazily per process: Celery's prefork children do not inherit the parent's threads. A
        # worker has one store; a process that changes stores (tests) gets a listener on the new one.
        if _listener is None or _listener.pid != os.getpid() or _listener.store is not store:
            if _listener is not None and _listener.pid == os.getpid():
                _listener.stop()
            _listener = _Listener(store)
        listener = _listener
    event = listener.watch(run_id)
    try:
        yield event
    finally:
        listener.unwatch(run_id)
