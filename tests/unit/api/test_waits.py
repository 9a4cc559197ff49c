"""api/waits.py: a wait hears the end of its run even when the pub/sub connection dropped meanwhile, and
without reading it when it subscribed before the run was accepted; it counts as open once; its observation
carries the trace it was made in as an exemplar."""

from __future__ import annotations

import asyncio
import re
from typing import Any, cast

from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics import exposition as openmetrics

from clawbus.api.waits import RunWaiter
from clawbus.shared.ports.live import Ended, Signal, SignalsLost, Subscribed
from clawbus.shared.store.live import LiveStore
from clawbus.shared.wire.models import Run, RunStatus
from tests.support.runs import a_run

RUN = "3c2b1a00-0000-4000-8000-000000000001"


class _Signals:
    """Pub/sub as the waiter sees it: what ``receive`` hands out, in order, then silence."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[Signal | Exception | None] = asyncio.Queue()
        self.channels: set[str] = set()

    async def open(self, home: str) -> None:
        pass

    async def close(self) -> None:
        pass

    async def subscribe(self, run_id: str) -> bool:
        self.channels.add(run_id)
        self.inbox.put_nowait(Subscribed(run_id))
        return True

    async def unsubscribe(self, run_id: str) -> bool:
        self.channels.discard(run_id)
        return True

    def subscribed(self) -> set[str]:
        return set(self.channels)

    async def receive(self) -> Signal | None:
        item = await self.inbox.get()
        if isinstance(item, Exception):
            raise item
        return item


class _Live:
    def __init__(self) -> None:
        self.run: Run | None = a_run(RUN, RunStatus.RUNNING)
        self.signals_ = _Signals()
        self.reads = 0  # runs read

    def signals(self) -> _Signals:
        return self.signals_

    async def read_run(self, run_id: str) -> Run | None:
        self.reads += 1
        return self.run

    async def read_runs(self, run_ids: list[str]) -> list[Run | None]:
        self.reads += len(run_ids)
        return [self.run for _ in run_ids]


def test_a_run_that_ends_while_pub_sub_is_down_is_heard_at_the_first_message_after_it() -> None:
    """No reconnect barrier comes back (as under a Sentinel failover): the first message after the loss,
    redis-py's re-subscribe confirmation, makes the waiter read every pending run again."""

    async def scenario() -> Run | None:
        live = _Live()
        waiter = RunWaiter(cast(LiveStore, live))
        await waiter.start()
        waiting = asyncio.create_task(waiter.wait(RUN, timeout=30))
        while live.signals_.inbox.qsize() or RUN not in live.signals_.channels:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # the wait read the run (running) and listens for its end
        live.signals_.inbox.put_nowait(SignalsLost("connection reset"))
        live.run = a_run(RUN, RunStatus.OK)  # its end was published while nobody listened
        live.signals_.inbox.put_nowait(None)  # the re-subscribe confirmation of the waiter's home channel
        try:
            return await asyncio.wait_for(waiting, timeout=5)
        finally:
            await waiter.close()

    run: Any = asyncio.run(scenario())
    assert run is not None
    assert run.status == RunStatus.OK


def test_a_wait_subscribed_before_its_run_was_accepted_hears_its_end_without_reading_it() -> None:
    """A waiting send subscribes, then accepts (``watch``): its run cannot have ended unheard, so the wait
    skips the read that follows a subscription (a Redis round trip on the request's path)."""

    async def scenario() -> tuple[Run | None, int]:
        live = _Live()
        live.run = None  # not accepted yet
        waiter = RunWaiter(cast(LiveStore, live))
        await waiter.start()
        try:
            async with waiter.watch(RUN, timeout=5) as watch:
                assert watch.confirmed
                live.run = a_run(RUN, RunStatus.RUNNING)  # the accept
                waiting = asyncio.create_task(waiter.wait(RUN, timeout=30, watch=watch))
                await asyncio.sleep(0.05)
                live.signals_.inbox.put_nowait(Ended(RUN, a_run(RUN, RunStatus.OK)))
                run = await asyncio.wait_for(waiting, timeout=5)
            return run, live.reads
        finally:
            await waiter.close()

    run, reads = asyncio.run(scenario())
    assert run is not None
    assert run.status == RunStatus.OK
    assert reads == 0


def test_a_watched_send_counts_as_one_open_wait_and_only_once_its_run_was_accepted() -> None:
    """``clawbus_active_waits`` counts waits held open: a send's subscription before its accept is none
    (a test waits on the gauge for every send to be accepted), and the wait after it is one."""

    async def scenario() -> list[int]:
        live = _Live()
        waiter = RunWaiter(cast(LiveStore, live))
        await waiter.start()
        seen = [waiter.active]
        try:
            async with waiter.watch(RUN, timeout=5) as watch:
                seen.append(waiter.active)
                waiting = asyncio.create_task(waiter.wait(RUN, timeout=30, watch=watch))
                await asyncio.sleep(0.05)
                seen.append(waiter.active)
                live.signals_.inbox.put_nowait(Ended(RUN, a_run(RUN, RunStatus.OK)))
                await asyncio.wait_for(waiting, timeout=5)
                seen.append(waiter.active)
            return seen
        finally:
            await waiter.close()

    assert asyncio.run(scenario()) == [0, 0, 1, 0]


def test_a_reconnect_before_a_watched_runs_accept_does_not_end_its_wait() -> None:
    """The reconnect re-reads every pending run; a watched one not accepted yet is missing then, which is
    no end: the wait after the accept still hears the run's end."""

    async def scenario() -> Run | None:
        live = _Live()
        live.run = None
        waiter = RunWaiter(cast(LiveStore, live))
        await waiter.start()
        try:
            async with waiter.watch(RUN, timeout=5) as watch:
                live.signals_.inbox.put_nowait(SignalsLost("connection reset"))
                live.signals_.inbox.put_nowait(None)  # the first message after it: every run re-read
                while live.reads == 0:
                    await asyncio.sleep(0.01)
                live.run = a_run(RUN, RunStatus.RUNNING)  # the accept
                waiting = asyncio.create_task(waiter.wait(RUN, timeout=30, watch=watch))
                await asyncio.sleep(0.05)
                assert not waiting.done()
                live.signals_.inbox.put_nowait(Ended(RUN, a_run(RUN, RunStatus.OK)))
                return await asyncio.wait_for(waiting, timeout=5)
        finally:
            await waiter.close()

    run = asyncio.run(scenario())
    assert run is not None
    assert run.status == RunStatus.OK


def _open_metrics(waiter: RunWaiter) -> str:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(waiter.wait_seconds)
    return openmetrics.generate_latest(registry).decode()


def test_a_wait_inside_a_span_carries_its_trace_id_as_an_exemplar() -> None:
    """An SDK tracer provider of the test's own (the global one left alone): the wait's observation, made
    while the span is current, names the span's trace in the OpenMetrics exposition."""
    tracer = TracerProvider().get_tracer("test")

    async def scenario() -> tuple[RunWaiter, str]:
        live = _Live()
        live.run = a_run(RUN, RunStatus.OK)
        waiter = RunWaiter(cast(LiveStore, live))
        await waiter.start()
        try:
            with tracer.start_as_current_span("wait") as span:
                await waiter.wait(RUN, timeout=5)
            return waiter, format(span.get_span_context().trace_id, "032x")
        finally:
            await waiter.close()

    waiter, trace_id = asyncio.run(scenario())
    exposed = _open_metrics(waiter)
    exemplars = [line for line in exposed.splitlines() if " # " in line]
    assert len(exemplars) == 1, exposed
    # On the bucket the wait's duration fell in (the lowest that holds it).
    assert re.match(r'clawbus_wait_seconds_bucket\{le="[0-9.]+",outcome="ended"\} 1\.0 # ', exemplars[0])
    assert f'{{trace_id="{trace_id}"}}' in exemplars[0]
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)
    assert trace_id != "0" * 32


def test_a_wait_outside_any_span_has_no_exemplar() -> None:
    async def scenario() -> RunWaiter:
        live = _Live()
        live.run = a_run(RUN, RunStatus.OK)
        waiter = RunWaiter(cast(LiveStore, live))
        await waiter.start()
        try:
            await waiter.wait(RUN, timeout=5)
            return waiter
        finally:
            await waiter.close()

    exposed = _open_metrics(asyncio.run(scenario()))
    assert 'clawbus_wait_seconds_count{outcome="ended"} 1' in exposed
    assert "trace_id" not in exposed
