"""workers/broker.py: kombu's Redis channel with one publishing client, against a real redis-server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from kombu import Connection

from shared.config import Config
from shared.runs import LaneHead
from workers import broker, queues
from workers.celery_app import create_app
from workers.dispatch import CeleryDispatcher
from workers.testing.processes import RedisServer


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
