"""The worker's consumer: Celery's, with its task events published in batches instead of one by one, and
a broker connection that is tried again every second while it is down.

A run task sends three events for Flower (received, started, succeeded). Celery buffers them and asks its
event loop to flush "soon", so a quick run pays three PUBLISH round trips, each on the consumer's thread
while the run's own thread wants the GIL. Here the first buffered event schedules one flush
``EVENT_FLUSH_SECONDS`` later: a quick run's events leave together, under load the events of many runs
share a publish (Celery still flushes a group at once when it reaches its ``buffer_limit``), and Flower
sees every event, each with the time it was sent, at most that much later (docs/decisions.md, "Task
events in batches").

kombu backs off between connection attempts (2, 4, 6 ... up to 30 s): after an outage of half a minute a
worker would come back up to 30 s after Redis did, and with it the recovery pass it asks for on
connecting (``workers.reaper.ReapOnConnect``) that sends lost queue messages again. Retrying every
``RECONNECT_SECONDS`` keeps that within seconds of Redis answering, whatever the outage's length.

Selected with ``worker_consumer`` (``workers.celery_app``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from celery.worker.consumer.consumer import Consumer as CeleryConsumer

log = logging.getLogger(__name__)

EVENT_FLUSH_SECONDS = 0.1
RECONNECT_SECONDS = 1.0


class Consumer(CeleryConsumer):  # type: ignore[misc]  # celery ships no types
    _flush_scheduled = False

    def on_send_event_buffered(self) -> None:
        # Called from any thread (a run's pool thread sends its started and succeeded events); call_soon
        # is the hub's thread-safe door, and the timer is then set on the hub's own thread.
        if self.hub is not None and not self._flush_scheduled:
            self._flush_scheduled = True
            self.hub.call_soon(self._schedule_flush)

    def _schedule_flush(self) -> None:
        self.hub.call_later(EVENT_FLUSH_SECONDS, self._flush_buffered)

    def _flush_buffered(self) -> None:
        # Cleared first: an event buffered while this flush publishes schedules the next one.
        self._flush_scheduled = False
        self._flush_events()

    def shutdown(self) -> None:
        # Events still waiting for their flush go out before the dispatcher is closed; a broker that is
        # gone by now must not keep the worker from stopping.
        try:
            self._flush_events()
        except Exception:
            log.warning("task events not published at shutdown", exc_info=True)
        super().shutdown()

    def on_connection_error_after_connected(self, exc: Any) -> None:
        # The dispatcher is rebuilt on the new connection; a flush scheduled on the old one may never run.
        self._flush_scheduled = False
        super().on_connection_error_after_connected(exc)

    def ensure_connected(self, conn: Any) -> Any:
        # Celery calls kombu's ensure_connection with its default backoff; this connection's attempts come
        # every RECONNECT_SECONDS instead (Celery's own logging and retry count stay as they are).
        conn.ensure_connection = functools.partial(
            conn.ensure_connection,
            interval_start=RECONNECT_SECONDS,
            interval_step=0,
            interval_max=RECONNECT_SECONDS,
        )
        return super().ensure_connected(conn)
