"""workers/messages.py: a run's task message rendered for the accept script is what Celery's send_task
writes, against a real redis-server (and a real worker runs what an accept pushed: the send tests)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

from clawbus.shared.config import Config
from clawbus.shared.domain.runs import LaneHead
from clawbus.workers import queues
from clawbus.workers.celery_app import create_app
from clawbus.workers.dispatch import CeleryDispatcher
from tests.support.processes import RedisServer

HEAD = LaneHead("run-1", "agent:main:main", "send", "flow-1")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Celery]:
    server = RedisServer(tmp_path / "redis").start()
    made = create_app(Config.model_validate({"redis": {"url": server.url}}))
    try:
        yield made
    finally:
        made.close()
        server.stop()


def _opened(envelope: dict[str, Any], *volatile: str) -> dict[str, Any]:
    """The envelope with its body decoded and what differs per send (its tag, ``volatile`` body fields)
    left out."""
    body = json.loads(base64.b64decode(envelope["body"]))
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in volatile}
    properties = {k: v for k, v in envelope["properties"].items() if k != "delivery_tag"}
    return {**envelope, "body": body, "properties": properties}


def test_a_rendered_run_message_and_event_are_what_send_task_writes(app: Celery) -> None:
    dispatcher = CeleryDispatcher(app)
    redis = app.connection_for_write().default_channel.client
    events = redis.pubsub()
    events.psubscribe("*celeryev*")
    assert events.get_message(timeout=5)["type"] == "psubscribe"
    try:
        dispatcher.dispatch_run(HEAD)
        sent = json.loads(redis.rpop(queues.RUNS))
        published = events.get_message(timeout=5)
        assert published is not None
        rendered = dispatcher.render_run(HEAD)
    finally:
        events.close()
    assert rendered.queue == queues.RUNS
    assert _opened(json.loads(rendered.message)) == _opened(sent)
    assert rendered.event_channel == published["channel"].decode()
    volatile = ("timestamp", "clock")
    assert _opened(json.loads(rendered.event), *volatile) == _opened(json.loads(published["data"]), *volatile)
