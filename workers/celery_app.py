"""The Celery app and its settings (docs/architecture.md, "Reliability"). No task code: the API builds this
same app to enqueue by name, and only a worker imports ``workers.tasks``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery import Celery
from celery.signals import beat_init
from kombu.entity import Exchange, Queue

from clawbus.shared.config import Config
from clawbus.shared.store import connection
from clawbus.workers import broker, queues

# Redelivery of an unacknowledged message after this long is harmless (the claim refuses a run that is
# still leased) but wasteful; recovery from a lost worker is the reaper's job, on lease expiry.
VISIBILITY_TIMEOUT_SECONDS = 3600
SOFT_SHUTDOWN_SECONDS = 60.0


def create_app(config: Config, *, include: list[str] | None = None) -> Celery:
    url = connection.celery_url(config.redis)
    app = Celery("clawbus", broker=url, backend=url, include=include or [])
    transport = {
        "visibility_timeout": VISIBILITY_TIMEOUT_SECONDS,
        "global_keyprefix": "",
        **connection.celery_options(config.redis),
    }
    app.conf.update(
        # One direct exchange per queue: a message routed to one queue never lands in another.
        task_queues=[Queue(name, Exchange(name, type="direct"), routing_key=name) for name in queues.ALL],
        task_default_queue=queues.RUNS,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        result_expires=3600,
        broker_transport=broker.SENTINEL_TRANSPORT if config.redis.sentinel else broker.TRANSPORT,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        broker_connection_retry_on_startup=True,
        # At-least-once: acknowledge after the task ran; a lost worker's task is retried a bounded number
        # of times (each retry may take the dead attempt's lease over at once).
        task_acks_late=True,
        task_retry_on_worker_lost=True,
        task_reject_on_worker_lost=False,
        worker_prefetch_multiplier=1,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        # SIGTERM is a warm shutdown: the current runs finish (give the worker a grace period above the
        # longest run). SIGQUIT, or a second Ctrl-C, gives them this long, then cancels them and puts their
        # messages back; a run cut short is taken over when its lease lapses.
        worker_soft_shutdown_timeout=SOFT_SHUTDOWN_SECONDS,
        # Events for Flower, published in batches (workers.consumer).
        worker_send_task_events=True,
        worker_consumer="clawbus.workers.consumer:Consumer",
        task_send_sent_event=True,
        task_track_started=True,
        worker_hijack_root_logger=False,
        timezone="UTC",
        beat_schedule={
            "reap-stalled-lanes": {
                "task": queues.REAP_TASK,
                "schedule": timedelta(seconds=config.runs.reap_interval_seconds),
                # ignore_result: otherwise Celery's Redis backend subscribes beat to a result channel per
                # send, and never leaves it.
                "options": {
                    "queue": queues.MAINTENANCE,
                    "ignore_result": True,
                },
            },
            "archive-ended-subagents": {
                "task": queues.ARCHIVE_TASK,
                "schedule": timedelta(seconds=config.runs.archive_sweep_seconds),
                "options": {
                    "queue": queues.MAINTENANCE,
                    "ignore_result": True,
                },
            },
        },
    )
    return app


@beat_init.connect
def _beat_sends_no_task_sent_events(sender: Any, **_: Any) -> None:
    """Beat sends only the maintenance tasks, which stay out of Flower's task list (``workers.tasks``):
    their task-sent events alone would list a reap every few seconds there."""
    sender.app.conf.task_send_sent_event = False
