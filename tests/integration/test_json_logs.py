"""A real worker's output: every log line one JSON object, Celery's included; a run's and a flow's lines carry
their ids."""

from __future__ import annotations

import json
import re
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SendResult

from tests.support.exchanges import SECRET, send_with_announce_to
from tests.support.fake_http import fake_server
from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN, Fresh

# A line of Celery's own format ("[2024-05-01 10:00:00,000: INFO/MainProcess] ..."): its handler wrote it.
CELERY_FORMAT = re.compile(r"^\[\d{4}-\d\d-\d\d [\d:,]+: [A-Z]+/")


def json_lines(role: Role) -> list[dict[str, Any]]:
    """The log lines; the rest of the output is Celery's start-up banner, printed, not logged."""
    return [json.loads(line) for line in role.output().splitlines() if line.startswith("{")]


def task_line(role: Role, task: str, event: str, **context: str) -> dict[str, Any] | None:
    return next(
        (
            line
            for line in json_lines(role)
            if line["event"].startswith(f"Task {task}[")
            and event in line["event"]
            and all(line.get(key) == value for key, value in context.items())
        ),
        None,
    )


def test_worker_lines_are_json_and_a_runs_and_a_flows_task_lines_carry_their_ids(fresh: Fresh) -> None:
    with fake_server((200, {"ok": True})) as receiver:
        # A webhook delivery has a task of its own (a flow's task); a local one is made by the run task.
        fresh.start_redis(
            config={"channels": {"crm": {"type": "webhook", "url": receiver.url, "secret": SECRET}}}
        )
        worker = fresh.worker()
        _api, url = fresh.api()
        with Client(url, TOKEN) as client:
            posted = client.post_message("agent:main:main", "hi", timeout_seconds=10)
            flow_id = send_with_announce_to(client, "crm")
        assert isinstance(posted, SendResult)
        assert posted.status == "ok"

        ran = wait_for(
            lambda: task_line(worker, "clawbus.run", f"[{posted.run_id}] succeeded"),
            10,
            what="the run's line",
        )
        assert (ran["runId"], ran["sessionKey"]) == (posted.run_id, "agent:main:main")
        assert (ran["level"], ran["logger"]) == ("info", "celery.app.trace")
        assert "flowId" not in ran
        step = wait_for(
            lambda: task_line(worker, "clawbus.deliver", "succeeded", flowId=flow_id), 20, what="delivery"
        )
        assert "runId" not in step  # a step task is about its flow; the run it started logged its own lines

    lines = json_lines(worker)
    assert any(line["event"].endswith(" ready.") for line in lines)  # Celery's start-up lines too
    for line in lines:
        assert {"timestamp", "level", "logger", "event"} <= set(line), line
    assert not [line for line in worker.output().splitlines() if CELERY_FORMAT.match(line)]
