"""Leases of running runs, kept alive while their attempts work.

A claimed run holds its session's lease (owner, fencing token, expiry); an attempt that stops renewing it,
because its worker died, loses it when it lapses and the reaper dispatches the run again. One thread per
worker process renews the leases of every attempt that process is executing, whatever its pool.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.domain import logs
from clawbus.shared.ports.storage import Storage

log = logging.getLogger(__name__)


class LeaseLost(ClawbusError):
    """Another attempt took the run over: this one stops without writing."""


class _LeaseKeeper:
    """One thread per worker process renews the leases of the attempts that process is executing.

    Each lease is renewed a third of its length after the last renewal, so a step that finishes quickly
    never costs a heartbeat.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._leases: dict[str, _Lease] = {}
        self._wake = threading.Event()
        self._next_look = 0.0  # when the thread will look next (monotonic); 0 until it first sleeps
        threading.Thread(target=self._loop, name="clawbus-lease-keeper", daemon=True).start()

    def add(self, store: Storage, session_key: str, token: str, lease_ms: int) -> None:
        due = time.monotonic() + lease_ms / 3000
        with self._lock:
            self._leases[token] = _Lease(store, session_key, token, lease_ms, due)
            # Waking the thread on every run would cost each run a GIL hand-off: only when this lease is
            # due before the thread means to look again.
            wake = due < self._next_look
        if wake:
            self._wake.set()

    def remove(self, token: str) -> None:
        with self._lock:
            self._leases.pop(token, None)

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            with self._lock:
                due = [lease for lease in self._leases.values() if lease.due <= now]
                for lease in due:
                    lease.due = now + lease.lease_ms / 3000
                self._next_look = min((lease.due for lease in self._leases.values()), default=now + 60)
                wait = self._next_look - now
            for lease in due:
                self._renew(lease)
            self._wake.wait(max(wait, 0.01))
            self._wake.clear()

    def _renew(self, lease: _Lease) -> None:
        with logs.bound(session_key=lease.session_key):
            self._heartbeat(lease)

    def _heartbeat(self, lease: _Lease) -> None:
        try:
            if not lease.store.runs.heartbeat(lease.session_key, lease.token, lease.lease_ms):
                log.warning(
                    "lease of %s was taken over; this attempt's commit will be refused", lease.session_key
                )
                self.remove(lease.token)
        except Exception:
            log.exception("lease heartbeat failed for %s", lease.session_key)


@dataclass(slots=True)
class _Lease:
    store: Storage
    session_key: str
    token: str
    lease_ms: int
    due: float


_keeper: _LeaseKeeper | None = None
_keeper_lock = threading.Lock()


class LeaseHandle:
    """An attempt's lease in the keeper; paused while the run parks (a parked lease must not be renewed)."""

    def __init__(
        self, keeper: _LeaseKeeper, store: Storage, session_key: str, token: str, lease_ms: int
    ) -> None:
        self._keeper, self._args = keeper, (store, session_key, token, lease_ms)

    def resume(self) -> None:
        self._keeper.add(*self._args)

    def pause(self) -> None:
        self._keeper.remove(self._args[2])


@contextmanager
def kept(store: Storage, session_key: str, token: str, lease_ms: int) -> Iterator[LeaseHandle]:
    global _keeper
    with _keeper_lock:
        # Started lazily per process: Celery's prefork children do not inherit the parent's threads.
        if _keeper is None or _keeper.pid != os.getpid():
            _keeper = _LeaseKeeper()
        keeper = _keeper
    handle = LeaseHandle(keeper, store, session_key, token, lease_ms)
    handle.resume()
    try:
        yield handle
    finally:
        handle.pause()
