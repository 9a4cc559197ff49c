"""workers/broker.py: kombu's Redis channel with one publishing client, against a real redis-server."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu import Connection

from clawbus.shared.config import Config
from clawbus.shared.domain.runs import LaneHead
from clawbus.shared.ports.dispatch import DispatchUnavailable
from clawbus.shared.store.connection import WORKER_RETRIES
from clawbus.workers import broker, queues
from clawbus.workers.celery_app import create_app
from clawbus.workers.dispatch import CeleryDispatcher
from tests.support.processes import RedisServer, wait_for


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    running = RedisServer(tmp_path / "redis").start()
    try:
        yield running
    finally:
        running.stop()


def test_a_channel_publishes_through_one_client_until_its_pool_changes(server: RedisServer) -> None:
    with Connection(server.url, transport=broker.Transport) as connection:
        channel = connection.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
            assert first.connection_pool is channel.pool
        channel._pool = None  # what kombu does when it drops its pools after a lost connection
        with channel.conn_or_acquire() as rebuilt:
            assert rebuilt is not first
            assert rebuilt.connection_pool is channel.pool
            assert rebuilt.ping()


def test_a_dispatched_run_lands_on_its_queue_with_its_task_sent_event(server: RedisServer) -> None:
    app = create_app(Config.model_validate({"redis": {"url": server.url}}))
    redis = server.client()
    events = redis.pubsub()
    events.psubscribe("*celeryev*")
    assert events.get_message(timeout=5)["type"] == "psubscribe"
    try:
        CeleryDispatcher(app).dispatch_run(LaneHead("run-1", "agent:main:main", "chat"))
        [message] = redis.lrange(queues.RUNS, 0, -1)
        headers = json.loads(message)["headers"]
        assert (headers["task"], headers["id"]) == (queues.RUN_TASK, "run-1")
        published = events.get_message(timeout=5)
        assert published is not None
        assert "task.sent" in published["channel"]
    finally:
        events.close()
        app.close()


def test_a_dispatch_made_while_redis_restarts_is_sent_once_redis_is_back(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker's enqueue (an orchestrator's spawn, a lane's next run) rides out a Redis restart as its
    store calls do, instead of failing its task: kombu's batch publish does not retry on its own."""
    app = create_app(Config.model_validate({"redis": {"url": server.url}}))
    dispatcher = CeleryDispatcher(app, retries=WORKER_RETRIES)
    caplog.set_level(logging.WARNING, logger="clawbus.workers.dispatch")
    try:
        dispatcher.dispatch_run(LaneHead("run-1", "agent:main:main", "chat"))  # the producer is connected
        assert server.child is not None
        server.child.kill()
        failed: list[BaseException] = []

        def dispatch() -> None:
            try:
                dispatcher.dispatch_run(LaneHead("run-2", "agent:main:main", "chat"))
            except BaseException as exc:
                failed.append(exc)

        sender = threading.Thread(target=dispatch)
        sender.start()
        wait_for(lambda: "sending it again" in caplog.text, 10, what="a publish to fail while Redis is away")
        server.start()
        sender.join(30)
        assert not sender.is_alive()
        assert failed == []
        sent = [json.loads(m)["headers"]["id"] for m in server.client().lrange(queues.RUNS, 0, -1)]
        assert "run-2" in sent
    finally:
        app.close()


def test_a_dispatch_that_finds_redis_away_past_its_retries_fails_as_the_dispatch_ports_error(
    server: RedisServer,
) -> None:
    """What the API answers with a 503, as any call made while Redis is away; not kombu's own error."""
    app = create_app(Config.model_validate({"redis": {"url": server.url}}))
    try:
        server.stop()
        with pytest.raises(DispatchUnavailable):
            CeleryDispatcher(app, retries=1).dispatch_run(LaneHead("run-1", "agent:main:main", "chat"))
    finally:
        app.close()
