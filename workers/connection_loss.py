"""What a worker says when it loses its broker connection with runs in flight, on a pool that cannot stop
a running task (threads, the default, and solo).

With ``worker_cancel_long_running_tasks_on_connection_loss`` Celery warns, for each late-acknowledged task
in flight, that it terminates the task, asks the pool to, and logs the pool's refusal with a traceback: two
warnings and some sixty lines a task, at every Redis restart or failover, and the first is not true. The
task goes on. The message Celery puts back is delivered again and finds the run's lease held (``busy``),
then the run ended (``done``): docs/architecture.md, "Reliability". On such a pool this filter makes the
pair one line a task that says so. A pool that can stop a task (prefork) logs what Celery logs.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.concurrency import get_implementation
from celery.signals import worker_init
from celery.worker.consumer.consumer import TERMINATING_TASK_ON_RESTART_AFTER_A_CONNECTION_LOSS

CONSUMER_LOGGER = "celery.worker.consumer.consumer"
# Celery's own text for the pool's refusal (celery.worker.consumer.consumer, not exported).
CANCEL_FAILED = "Failed to cancel active request %r after connection loss"
KEPT_RUNNING = (
    "%r goes on after the broker connection was lost: this pool cannot stop a running task, and the "
    "message's redelivery will find its run leased or ended"
)


class KeptRunning(logging.Filter):
    """Drops Celery's "Terminating it instead" and turns the refusal that follows it into one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == TERMINATING_TASK_ON_RESTART_AFTER_A_CONNECTION_LOSS:
            return False
        refused = record.exc_info[1] if record.exc_info else None
        if record.msg == CANCEL_FAILED and isinstance(refused, NotImplementedError):
            record.msg, record.exc_info, record.exc_text = KEPT_RUNNING, None, None
        return True


def can_stop_tasks(pool: Any) -> bool:
    """Whether ``pool`` (a pool class, or its name as ``--pool`` takes it) can stop a running task. The
    thread and solo pools keep the base pool's refusal (prefork sets its own when it starts)."""
    return get_implementation(pool) not in {get_implementation(name) for name in ("threads", "solo")}


def install() -> None:
    """Filter the consumer's lines in a worker whose pool cannot stop a task (known at its start)."""
    worker_init.connect(on_worker_init, weak=False)


def on_worker_init(sender: Any = None, **_: Any) -> None:
    if sender is not None and not can_stop_tasks(sender.pool_cls):
        logging.getLogger(CONSUMER_LOGGER).addFilter(KeptRunning())
