"""workers/consumer.py: the first task event buffered schedules one flush a window later, from the hub's
own thread; the events buffered meanwhile ride along; a stopping worker publishes what is still buffered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from celery.worker.consumer.consumer import Consumer as CeleryConsumer

from clawbus.workers.consumer import EVENT_FLUSH_SECONDS, Consumer


class _Hub:
    """The calls a consumer makes on kombu's event loop, run when the test says."""

    def __init__(self) -> None:
        self.soon: list[Callable[[], Any]] = []
        self.later: list[tuple[float, Callable[[], Any]]] = []

    def call_soon(self, callback: Callable[[], Any]) -> None:
        self.soon.append(callback)

    def call_later(self, delay: float, callback: Callable[[], Any]) -> None:
        self.later.append((delay, callback))

    def run_soon(self) -> None:
        callbacks, self.soon = self.soon, []
        for callback in callbacks:
            callback()


class _Dispatcher:
    def __init__(self) -> None:
        self.flushes = 0

    def flush(self) -> None:
        self.flushes += 1


def _consumer() -> tuple[Consumer, _Hub, _Dispatcher]:
    consumer = Consumer.__new__(Consumer)  # no broker: only the event-flush methods are under test
    hub, dispatcher = _Hub(), _Dispatcher()
    consumer.hub, consumer.event_dispatcher = hub, dispatcher
    return consumer, hub, dispatcher


def test_events_buffered_before_the_flush_share_one_flush_a_window_later() -> None:
    consumer, hub, dispatcher = _consumer()
    for _ in range(3):  # received, started, succeeded of one quick run
        consumer.on_send_event_buffered()
    assert len(hub.soon) == 1
    assert dispatcher.flushes == 0
    hub.run_soon()
    [(delay, flush)] = hub.later
    assert delay == EVENT_FLUSH_SECONDS
    flush()
    assert dispatcher.flushes == 1


def test_an_event_buffered_after_a_flush_schedules_the_next_one() -> None:
    consumer, hub, _dispatcher = _consumer()
    consumer.on_send_event_buffered()
    hub.run_soon()
    hub.later.pop()[1]()
    consumer.on_send_event_buffered()
    assert len(hub.soon) == 1


def test_a_lost_connection_forgets_a_flush_its_hub_may_never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # Celery's own handling (warn, restart the blueprint) needs a running worker.
    monkeypatch.setattr(CeleryConsumer, "on_connection_error_after_connected", lambda self, exc: None)
    consumer, hub, _dispatcher = _consumer()
    consumer.on_send_event_buffered()
    consumer.on_connection_error_after_connected(ConnectionError("broker gone"))
    consumer.on_send_event_buffered()
    assert len(hub.soon) == 2
