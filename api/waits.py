"""Server-side waits: one pub/sub connection per API process, shared by every waiter.

The protocol that makes a wait lose nothing:

1. register the waiter, SUBSCRIBE to the run's completion channel, and wait for Redis to confirm;
2. only then read the run hash (a commit publishes in the same atomic step that writes the terminal
   state, so a run that ended before step 1 is seen here, and one that ends after is heard);
3. on a pub/sub reconnect, redis-py re-subscribes by itself; our connect hook then sends a PING through
   the same connection and, when its reply comes back (every re-SUBSCRIBE is then in force), re-reads
   every pending run.

A wait that subscribed before its run was accepted (``watch``: a waiting ``sessions_send`` subscribes,
then accepts) skips step 2: a run that did not exist when the subscription was confirmed cannot have ended
before it, so its end is heard. That saves the wait's read, a Redis round trip on the request's path
(docs/architecture.md, "How a run moves").

A timeout reads the run one last time and never touches it. Any API process can answer any wait: the
truth is the run hash, the channel is only the wake-up. A read that fails while the wait still has time
(Redis is away: a failover) is not the wait's answer: the reconnect reads every pending run again, and
the deadline read answers (a 503 only if Redis is still away then).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Histogram

from clawbus.shared.base import trace_context
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.ports.live import Ended, Live, Reconnected, Signal, Signals, SignalsLost, Subscribed
from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.wire.models import Run

log = logging.getLogger(__name__)

_RECONNECT_PAUSE_S = 0.5
# Reads of runs at once: after a reconnect every pending wait reads its run, and a burst of them would
# open a connection each.
_READS_AT_ONCE = 32


class ShuttingDown(ClawbusError):
    """The process is stopping: the wait ends now, and the caller should wait again elsewhere."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"the API is shutting down; wait again with GET /v1/runs/{run_id}/wait")
        self.run_id = run_id


@dataclass(eq=False)
class _Pending:
    run_id: str
    waiters: int = 0
    unconfirmed: int = 0
    confirmed: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    # The terminal run as the commit published it; None means "read the hash".
    run: Run | None = None
    # Watched before its accept: a re-read that finds no run yet is no end.
    unaccepted: bool = False


@dataclass(frozen=True, slots=True)
class Watch:
    """A subscription to a run's end taken before the run is accepted; ``confirmed``: Redis confirmed it in
    time, so the wait on that run need not read it first."""

    run_id: str
    confirmed: bool


class RunWaiter:
    def __init__(self, live: Live, confirm_within_s: float = 2.0) -> None:
        """``confirm_within_s``: how long a ``watch`` waits for Redis to confirm its subscription before the
        caller goes on without it (the API's read timeout: an accept never waits longer on pub/sub than on
        a command)."""
        self._live = live
        self._confirm_within_s = confirm_within_s
        # Pending waits by run id.
        self._pending: dict[str, _Pending] = {}
        # Waits in progress, each counted once: a watched send's subscription before its accept is none.
        self._waiting = 0
        self._signals: Signals | None = None
        self._reader: asyncio.Task[None] | None = None
        self._unsubscribing: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self._reads = asyncio.Semaphore(_READS_AT_ONCE)
        # Not in any registry: /metrics collects it with the rest (api.metrics).
        self.wait_seconds = Histogram(
            "clawbus_wait_seconds",
            "How long server-side waits took, by how they ended.",
            ["outcome"],
            registry=None,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
        )

    @property
    def active(self) -> int:
        """Waits held open (``clawbus_active_waits``): begun once their run was accepted."""
        return self._waiting

    def release_all(self) -> None:
        """Shutting down: every wait, and every wait that starts from now on, ends at once with
        ``ShuttingDown`` instead of holding the process until its timeout. The runs are not touched."""
        self._stopping.set()

    async def start(self) -> None:
        signals = self._live.signals()
        await signals.open(uuid.uuid4().hex)
        self._signals = signals
        self._reader = asyncio.create_task(self._read_forever(), name="clawbus-run-waiter")

    async def close(self) -> None:
        if self._reader:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        if self._signals:
            await self._signals.close()

    async def read(self, run_id: str) -> Run | None:
        async with self._reads:
            return await self._live.read_run(run_id)

    @contextlib.asynccontextmanager
    async def watch(self, run_id: str, timeout: float) -> AsyncIterator[Watch]:
        """Subscribe to ``run_id``'s end before it is accepted, and hold the subscription for the block.
        Waits up to ``timeout`` s (at most the confirmation bound) for Redis's confirmation; without it the
        block goes on, and its wait reads the run as any wait does."""
        pending = await self._acquire(run_id)
        pending.unaccepted = pending.waiters == 1
        try:
            deadline = asyncio.get_running_loop().time() + min(timeout, self._confirm_within_s)
            try:
                confirmed = await self._within(pending.confirmed.wait(), deadline, run_id)
            except ShuttingDown:  # the wait after the accept says so, with the run to wait on elsewhere
                confirmed = False
            yield Watch(run_id, confirmed and pending.unaccepted)
        finally:
            pending.unaccepted = False
            self._release(run_id, pending)

    async def wait(self, run_id: str, timeout: float, watch: Watch | None = None) -> Run | None:
        """The run once terminal, else (after ``timeout`` s) the run as it is; None if it does not exist.
        ``watch``: the caller subscribed to this run before accepting it (``watch``)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout
        pending = await self._acquire(run_id)
        outcome = "error"
        subscribed_first = watch is not None and watch.run_id == run_id and watch.confirmed
        pending.unaccepted = False  # the caller accepted it (or was refused: then it is missing)
        self._waiting += 1
        try:
            run = await self._await(run_id, pending, deadline, subscribed_first)
            outcome = "missing" if run is None else "ended" if run.status.terminal else "timeout"
            return run
        except ShuttingDown:
            outcome = "shutdown"
            raise
        finally:
            self._waiting -= 1
            self._release(run_id, pending)
            # The request's trace, for a scraper that reads exemplars (api/metrics.py).
            self.wait_seconds.labels(outcome).observe(
                loop.time() - started, exemplar=trace_context.exemplar()
            )

    async def _await(
        self, run_id: str, pending: _Pending, deadline: float, subscribed_first: bool
    ) -> Run | None:
        if await self._within(pending.confirmed.wait(), deadline, run_id):
            if pending.ended.is_set() and pending.run is not None:  # a reconnect's re-read found its end
                return pending.run
            try:
                # Subscribed before the run was accepted: it cannot have ended unheard.
                run = None if subscribed_first else await self.read(run_id)
            except StoreUnavailable as exc:
                log.warning("reading run %s failed (%s); waiting on", run_id, exc)
            else:
                if not subscribed_first and (run is None or run.status.terminal):
                    return run
            if await self._within(pending.ended.wait(), deadline, run_id) and pending.run is not None:
                return pending.run
        return await self.read(run_id)

    async def _within(self, awaitable: Any, deadline: float, run_id: str) -> bool:
        """``awaitable`` done before ``deadline`` (loop time): True; False if the deadline passed first;
        ShuttingDown if the process began to stop first."""
        if self._stopping.is_set():
            raise ShuttingDown(run_id)
        work = asyncio.ensure_future(awaitable)
        stop = asyncio.ensure_future(self._stopping.wait())
        remaining = max(deadline - asyncio.get_running_loop().time(), 0)
        try:
            done, _ = await asyncio.wait({work, stop}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for future in (work, stop):
                future.cancel()
        if work in done:
            return True
        if stop in done:
            raise ShuttingDown(run_id)
        return False

    # -- subscriptions --

    async def _acquire(self, run_id: str) -> _Pending:
        pending = self._pending.get(run_id)
        if pending is None:
            pending = self._pending[run_id] = _Pending(run_id)
        pending.waiters += 1
        if pending.waiters == 1:
            await self._subscribe(pending)
        return pending

    async def _subscribe(self, pending: _Pending) -> None:
        assert self._signals is not None
        pending.unconfirmed += 1
        if not await self._signals.subscribe(pending.run_id):
            # No confirmation will come for this attempt: counting it would leave the waiter unconfirmed
            # after the reconnect barrier subscribes again, and so deaf until its deadline. Not fatal: the
            # barrier re-subscribes and re-reads, and the deadline read still answers the run's true state.
            pending.unconfirmed -= 1
            log.warning("subscribe to run %s failed; waiting for pub/sub to return", pending.run_id)

    def _release(self, run_id: str, pending: _Pending) -> None:
        pending.waiters -= 1
        if pending.waiters == 0 and self._pending.get(run_id) is pending:
            del self._pending[run_id]
            # Off the answer's path: the caller need not wait for Redis to drop the subscription.
            task = asyncio.get_running_loop().create_task(self._unsubscribe(run_id))
            self._unsubscribing.add(task)
            task.add_done_callback(self._unsubscribing.discard)

    async def _unsubscribe(self, run_id: str) -> None:
        if run_id in self._pending:  # a new waiter took the run over meanwhile: keep it
            return
        assert self._signals is not None
        if not await self._signals.unsubscribe(run_id):
            log.debug("unsubscribe from run %s failed; the next reconnect drops it", run_id)

    # -- the reader --

    async def _read_forever(self) -> None:
        assert self._signals is not None
        lost = False
        while True:
            try:
                signal = await self._signals.receive()
            except SignalsLost as exc:
                log.warning("pub/sub connection lost (%s); reconnecting", exc)
                lost = True
                await asyncio.sleep(_RECONNECT_PAUSE_S)
                continue
            try:
                if lost:
                    # The first message after a loss comes after redis-py's re-subscribe, which Redis
                    # answers only once every channel is subscribed again: re-read now, whether or not
                    # the barrier's PING comes back (after a Sentinel failover it did not, and waits hung
                    # until their deadline on runs that ended while the connection was down).
                    lost = False
                    await self._recheck_all()
                if signal is not None:
                    await self._handle(signal)
            except Exception:  # every wait of the process depends on this task: it must not die
                log.exception("handling a pub/sub signal failed")

    async def _handle(self, signal: Signal) -> None:
        if isinstance(signal, Reconnected):
            await self._recheck_all()
            return
        pending = self._pending.get(signal.run_id)
        if pending is None:
            return
        if isinstance(signal, Ended):
            pending.run = signal.run
            pending.ended.set()
        elif isinstance(signal, Subscribed) and pending.unconfirmed > 0:
            pending.unconfirmed -= 1
            if pending.unconfirmed == 0:
                pending.confirmed.set()

    async def _recheck_all(self) -> None:
        assert self._signals is not None
        subscribed = self._signals.subscribed()
        heard = []
        for run_id, pending in list(self._pending.items()):
            if run_id not in subscribed:  # its subscribe was not sent: send it now
                await self._subscribe(pending)
                continue
            pending.unconfirmed = 0
            pending.confirmed.set()
            heard.append((run_id, pending))
        if not heard:
            return
        try:
            runs = await self._live.read_runs([run_id for run_id, _ in heard])
        except StoreUnavailable:  # Redis away again: the next reconnect reads them, or the deadline read
            return
        for (_, pending), run in zip(heard, runs, strict=True):
            if (run is None and not pending.unaccepted) or (run is not None and run.status.terminal):
                pending.run = run
                pending.ended.set()
