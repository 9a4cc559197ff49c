"""workers/connection_loss.py: on a pool that cannot stop a running task, the consumer's two warnings a task
after a lost broker connection become one line without a traceback; a pool that can keeps Celery's."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from celery.concurrency.thread import TaskPool as ThreadPool
from celery.worker.consumer.consumer import TERMINATING_TASK_ON_RESTART_AFTER_A_CONNECTION_LOSS

from workers.connection_loss import (
    CANCEL_FAILED,
    CONSUMER_LOGGER,
    KeptRunning,
    can_stop_tasks,
    on_worker_init,
)

REQUEST = "<Request: clawbus.run[6f1c1a9e] ['6f1c1a9e', 'agent:main:main'] {}>"


@pytest.fixture
def consumer_log(caplog: pytest.LogCaptureFixture) -> Iterator[logging.Logger]:
    logger = logging.getLogger(CONSUMER_LOGGER)
    kept = list(logger.filters)
    caplog.set_level(logging.WARNING, logger=CONSUMER_LOGGER)
    yield logger
    logger.filters[:] = kept


def lose_connection(logger: logging.Logger) -> None:
    """What Celery's consumer logs for a task in flight when its connection is lost, the pool's refusal
    raised by the thread pool itself."""
    logger.warning(TERMINATING_TASK_ON_RESTART_AFTER_A_CONNECTION_LOSS, REQUEST)
    try:
        ThreadPool(limit=1).terminate_job(1234)
    except Exception:
        logger.warning(CANCEL_FAILED, REQUEST, exc_info=True)


def test_only_the_thread_and_solo_pools_cannot_stop_a_running_task() -> None:
    assert not can_stop_tasks("threads")
    assert not can_stop_tasks("solo")
    assert not can_stop_tasks(ThreadPool)
    assert can_stop_tasks("prefork")


def test_a_thread_pool_worker_logs_one_line_a_task_without_a_traceback(
    consumer_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    on_worker_init(sender=SimpleNamespace(pool_cls="threads"))
    lose_connection(consumer_log)
    [line] = caplog.records
    assert line.getMessage().startswith(f"{REQUEST!r} goes on after the broker connection was lost")
    assert line.exc_info is None
    assert "Terminating" not in caplog.text
    assert "Traceback" not in caplog.text


def test_a_prefork_worker_logs_what_celery_logs(
    consumer_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    on_worker_init(sender=SimpleNamespace(pool_cls="prefork"))
    assert not any(isinstance(f, KeptRunning) for f in consumer_log.filters)
    lose_connection(consumer_log)
    assert len(caplog.records) == 2
    assert caplog.records[1].exc_info is not None


def test_other_lines_of_the_consumer_pass_unchanged(
    consumer_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    on_worker_init(sender=SimpleNamespace(pool_cls="threads"))
    try:
        raise ConnectionError("Connection closed by server.")
    except ConnectionError:
        consumer_log.warning(CANCEL_FAILED, REQUEST, exc_info=True)  # not the pool's refusal: kept whole
    consumer_log.warning("consumer: Connection to broker lost. Trying to re-establish the connection...")
    assert len(caplog.records) == 2
    assert caplog.records[0].exc_info is not None
