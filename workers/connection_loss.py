"""What a worker says when it loses its broker connection with tasks in flight: what happens, in a line
a task, at the level it deserves. A Redis restart or failover is something clawbus carries through
(docs/architecture.md, "Reliability"); its worker logs should not read as a crash.

- On a pool that cannot stop a running task (threads, the default, and solo): with
  ``worker_cancel_long_running_tasks_on_connection_loss`` Celery warns, for each late-acknowledged task in
  flight, that it terminates the task, asks the pool to, and logs the pool's refusal with a traceback: two
  warnings and some sixty lines a task, and the first is not true. The task goes on. ``KeptRunning``
  makes the pair one line that says so. A pool that can stop a task (prefork) logs what Celery logs.
- On any pool: a task that ends after the connection went cannot acknowledge its message, and kombu logs
  that as critical, with a traceback. The message was put back when the connection went and is delivered
  again; its task finds its run leased or ended and does nothing (every task may run more than once).
  ``AckLost`` makes it one warning that says so.
"""

from __future__ import annotations

import logging
from typing import Any

from celery.concurrency import get_implementation
from celery.signals import worker_init
from celery.worker.consumer.consumer import TERMINATING_TASK_ON_RESTART_AFTER_A_CONNECTION_LOSS

from clawbus.shared.store.connection import RETRY_ON

CONSUMER_LOGGER = "celery.worker.consumer.consumer"
REQUEST_LOGGER = "celery.worker.request"
# Celery's and kombu's own texts (not exported): the pool's refusal, a lost acknowledgement.
CANCEL_FAILED = "Failed to cancel active request %r after connection loss"
ACK_FAILED = "Couldn't ack %r, reason:%r"
# What a lost broker connection raises when a message is acknowledged (workers/broker.py raises Redis's
# ConnectionError; a socket's own errors are OSErrors).
CONNECTION_LOST = (*RETRY_ON, OSError)
KEPT_RUNNING = (
    "%r goes on after the broker connection was lost: this pool cannot stop a running task, and the "
    "message's redelivery will find its run leased or ended"
)
ACK_LOST = (
    "message %r was not acknowledged (%s): it went back to its queue when the broker connection was lost, "
    "and its redelivery will find its run leased or ended"
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


class AckLost(logging.Filter):
    """kombu's critical "Couldn't ack", when the connection was lost, becomes a warning without the
    traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        reason = record.args[1] if isinstance(record.args, tuple) and len(record.args) == 2 else None
        if record.msg != ACK_FAILED or not isinstance(reason, CONNECTION_LOST):
            return True  # an ack refused on a live connection stays what kombu says it is
        record.msg, record.exc_info, record.exc_text = ACK_LOST, None, None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        # Logged at critical, it passed the logger's level; as a warning it must pass it again.
        return logging.getLogger(record.name).isEnabledFor(logging.WARNING)


def can_stop_tasks(pool: Any) -> bool:
    """Whether ``pool`` (a pool class, or its name as ``--pool`` takes it) can stop a running task. The
    thread and solo pools keep the base pool's refusal (prefork sets its own when it starts)."""
    return get_implementation(pool) not in {get_implementation(name) for name in ("threads", "solo")}


def install() -> None:
    """Filter the lines of a worker's consumer and requests, once its pool is known (at its start)."""
    worker_init.connect(on_worker_init, weak=False)


def on_worker_init(sender: Any = None, **_: Any) -> None:
    logging.getLogger(REQUEST_LOGGER).addFilter(AckLost())
    if sender is not None and not can_stop_tasks(sender.pool_cls):
        logging.getLogger(CONSUMER_LOGGER).addFilter(KeptRunning())
