"""workers/connection_loss.py: on a pool that cannot stop a running task, the consumer's two warnings a task
after a lost broker connection become one line without a traceback; a pool that can keeps Celery's. On
any pool, an acknowledgement lost with the connection is a one-line warning, not a critical traceback."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from celery.concurrency.thread import TaskPool as ThreadPool
from celery.worker.consumer.consumer import TERMINATING_TASK_ON_RESTART_AFTER_A_CONNECTION_LOSS
from kombu.message import Message
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from clawbus.workers.connection_loss import (
    CANCEL_FAILED,
    CONSUMER_LOGGER,
    REQUEST_LOGGER,
    KeptRunning,
    can_stop_tasks,
    on_worker_init,
)

REQUEST = "<Request: clawbus.run[6f1c1a9e] ['6f1c1a9e', 'agent:main:main'] {}>"


@pytest.fixture
def consumer_log(caplog: pytest.LogCaptureFixture) -> Iterator[logging.Logger]:
    yield from _log_of(CONSUMER_LOGGER, caplog)


@pytest.fixture
def request_log(caplog: pytest.LogCaptureFixture) -> Iterator[logging.Logger]:
    yield from _log_of(REQUEST_LOGGER, caplog)


def _log_of(name: str, caplog: pytest.LogCaptureFixture) -> Iterator[logging.Logger]:
    """The logger, its lines captured; the filters a test adds are gone after it."""
    logger = logging.getLogger(name)
    kept = list(logger.filters)
    caplog.set_level(logging.WARNING, logger=name)
    yield logger
    logger.filters[:] = kept


class _ClosedChannel:
    """The channel a message came on, once the broker connection is gone (or refusing the ack, with
    ``error``)."""

    no_ack_consumers = None

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error or RedisConnectionError("Connection closed by server.")

    def basic_ack(self, delivery_tag: object, multiple: bool = False) -> None:
        raise self.error


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


def test_an_ack_lost_with_the_connection_is_one_warning_without_a_traceback(
    request_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    on_worker_init(sender=SimpleNamespace(pool_cls="prefork"))  # any pool
    message = Message(body=b"{}", delivery_tag="7", channel=_ClosedChannel())
    message.ack_log_error(request_log, (RedisConnectionError,))  # as a task's request acknowledges
    [line] = caplog.records
    assert line.levelno == logging.WARNING
    assert line.getMessage().startswith("message '7' was not acknowledged (Connection closed by server.)")
    assert "redelivery will find its run leased or ended" in line.getMessage()
    assert line.exc_info is None


def test_a_worker_logging_errors_only_does_not_print_the_lost_ack(
    request_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    on_worker_init(sender=SimpleNamespace(pool_cls="threads"))
    request_log.setLevel(logging.ERROR)
    try:
        Message(body=b"{}", delivery_tag="7", channel=_ClosedChannel()).ack_log_error(
            request_log, (RedisConnectionError,)
        )
    finally:
        request_log.setLevel(logging.NOTSET)
    assert caplog.records == []


def test_an_ack_refused_on_a_live_connection_stays_critical_with_its_traceback(
    request_log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    on_worker_init(sender=SimpleNamespace(pool_cls="threads"))
    refused = _ClosedChannel(
        ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")
    )
    Message(body=b"{}", delivery_tag="7", channel=refused).ack_log_error(request_log, (ResponseError,))
    [line] = caplog.records
    assert line.levelno == logging.CRITICAL
    assert line.exc_info is not None
