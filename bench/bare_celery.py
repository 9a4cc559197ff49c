"""The baseline: a bare Celery app on clawbus's own Redis, with no-op tasks.

Broker and result backend are the one URL clawbus uses, and the worker settings that change what a task
costs match clawbus's worker (late acks, prefetch 1, JSON); nothing of clawbus itself is loaded.

The worker runs ``celery -A bench.bare_celery worker`` with ``BENCH_REDIS_URL`` set; the bench process
builds its own app with ``create_app`` instead, so importing this module never needs the variable.
"""

from __future__ import annotations

import os
import time
from functools import cache

import redis
from celery import Celery

URL_ENV = "BENCH_REDIS_URL"
# "1": the baseline also pays for the Celery events clawbus runs with (Flower): sent, received, started,
# succeeded. Separates what monitoring costs from what clawbus itself costs.
EVENTS_ENV = "BENCH_EVENTS"
NOOP_TASK = "bench.noop"
COUNT_TASK = "bench.count"
# The counting task's tally and the wall-clock time (s) of its latest execution.
DONE_KEY = "bench:bare:done"
LAST_KEY = "bench:bare:last"


def create_app(url: str, events: bool = False) -> Celery:
    app = Celery("bench_bare", broker=url, backend=url)
    app.conf.update(
        worker_send_task_events=events,
        task_send_sent_event=events,
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        result_expires=3600,
        task_acks_late=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )

    # Not shared: the bench builds one app per measurement, each registering the same task names.
    @app.task(name=NOOP_TASK, shared=False)  # type: ignore[untyped-decorator]
    def noop() -> None:
        return None

    # Results ignored, as clawbus's run task ignores them: only the Redis INCR says it ran.
    @app.task(name=COUNT_TASK, ignore_result=True, shared=False)  # type: ignore[untyped-decorator]
    def count() -> None:
        pipe = _redis(url, os.getpid()).pipeline(transaction=False)
        pipe.incr(DONE_KEY)
        # With two workers the last writer may be a hair earlier than the last finisher; microseconds.
        pipe.set(LAST_KEY, repr(time.time()))
        pipe.execute()

    return app


@cache
def _redis(url: str, pid: int) -> redis.Redis:
    # Keyed by pid: a prefork child must not share the connection it might inherit from its parent.
    return redis.Redis.from_url(url)


if URL_ENV in os.environ:
    app = create_app(os.environ[URL_ENV], events=os.environ.get(EVENTS_ENV) == "1")
