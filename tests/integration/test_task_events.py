"""The task events Flower reads, published in batches by a real worker under a backlog
(``workers.consumer``): every run's task sends received, started and succeeded once each, stamped when
they happened, several events to a publish."""

from __future__ import annotations

import base64
import json
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis
from clawbus_client import Client

from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

RUNS = 12
SLOTS = 2
BRISK_S = 0.2  # the brisk agent's echo takes this long
TASK_EVENTS = "/0.celeryev/task.multi"  # kombu's fanout channel for Celery's batched task events


def test_a_backlog_of_runs_reports_every_event_once_in_fewer_publishes(fresh: Fresh) -> None:
    server = fresh.start_redis()
    fresh.worker(concurrency=SLOTS)
    _, url = fresh.api()
    with _published(server.client()) as publishes, Client(url, TOKEN) as client:
        sessions = [client.open_session(f"agent:brisk:cron:events-{i}").key for i in range(RUNS)]
        run_ids = [client.sessions_send(key, "hi", timeout_seconds=0).run_id for key in sessions]
        for run_id in run_ids:
            assert client.wait_run(run_id, timeout=30) is not None

        def every_run_succeeded() -> dict[str, dict[str, list[dict[str, Any]]]] | None:
            by_task = _by_task(publishes)
            done = all(by_task[run_id]["task-succeeded"] for run_id in run_ids)
            return by_task if done else None

        by_task = wait_for(every_run_succeeded, 10, what="every run's task-succeeded event")
    events = sum(len(batch) for batch in publishes)
    # Batched: the runs' events leave together (one publish per flush window, about six events each
    # here); flushed one by one as Celery does, most publishes carried one or two.
    assert len(publishes) <= events / 3
    for run_id in run_ids:
        kinds = by_task[run_id]
        assert [len(kinds[kind]) for kind in ("task-received", "task-started", "task-succeeded")] == [1, 1, 1]
        received, started, succeeded = (
            kinds[kind][0]["timestamp"] for kind in ("task-received", "task-started", "task-succeeded")
        )
        # Stamped when they happened, not when their batch left: the run took its model's time.
        assert received <= started <= succeeded - BRISK_S * 0.9


@contextmanager
def _published(client: redis.Redis) -> Iterator[list[list[dict[str, Any]]]]:
    """Every batch of task events published while the block runs, decoded."""
    batches: list[list[dict[str, Any]]] = []
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(TASK_EVENTS)
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            message = pubsub.get_message(timeout=0.1)
            if message is not None:
                envelope = json.loads(message["data"])
                batches.append(json.loads(base64.b64decode(envelope["body"])))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield batches
    finally:
        stop.set()
        reader.join(5)
        pubsub.close()


def _by_task(batches: list[list[dict[str, Any]]]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for batch in list(batches):
        for event in batch:
            by_task[event["uuid"]][event["type"]].append(event)
    return by_task
