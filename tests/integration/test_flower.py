"""Flower watching the fleet: after a sessions_send, its API lists the exchange's tasks under their names,
linked to one root (the flow), with arguments that say which run, session or flow each one is; the
maintenance tasks beat and the workers send every few seconds are not in its list."""

from __future__ import annotations

import re
import sys
from typing import Any

import httpx
from clawbus_client import Client
from clawbus_client.models import SendResult

from clawbus.api.processes import free_port
from clawbus.workers import queues
from tests.support.exchanges import SECRET, finished, send_with_announce_to
from tests.support.fake_http import fake_server
from tests.support.processes import Role, wait_for
from tests.support.stack import STACK_CONFIG, TOKEN, Fresh

AUTH = ("ops", "flower-secret")


def test_flower_shows_a_flows_tasks_linked_to_its_root(fresh: Fresh) -> None:
    with fake_server((200, {"ok": True})) as receiver:
        # The announce goes out through a webhook: a delivery to an outside channel has a task of its own.
        fresh.start_redis(
            config={"channels": {"crm": {"type": "webhook", "url": receiver.url, "secret": SECRET}}}
        )
        fresh.worker()
        _, url = fresh.api()
        flower, base = _flower(fresh)
        try:
            assert httpx.get(f"{base}/api/tasks").status_code == 401  # its basic auth is on
            with Client(url, TOKEN) as client:
                flow_id = send_with_announce_to(client, "crm")
                flow = finished(client, flow_id)

            def flow_tasks() -> dict[str, dict[str, Any]] | None:
                tasks = _tasks(base)
                mine = {tid: t for tid, t in tasks.items() if t.get("root_id") == flow_id}
                names = {t.get("name") for t in mine.values()}
                # The primary run's task performs the turns and the announce itself (their runs inside it
                # when their sessions are free); the webhook delivery has a task of its own.
                wanted = {"clawbus.run", "clawbus.deliver"}
                return mine if wanted <= names else None

            tasks = wait_for(flow_tasks, 30, what="Flower to have seen the flow's tasks")
        finally:
            flower.stop()
    assert flow.delivery_status == "delivered"
    root = tasks[flow_id]  # the primary run's task: its id is the run id, its args say which session
    assert root["name"] == "clawbus.run"
    assert flow_id in root["args"]
    assert flow.target_key in root["args"]
    for task in tasks.values():
        if task["name"] != "clawbus.run":
            assert flow_id in task["args"]  # every step names its flow
    [deliver] = [t for t in tasks.values() if t["name"] == "clawbus.deliver"]
    assert deliver["parent_id"] == flow_id  # started by the primary run's task


def test_flower_lists_no_maintenance_tasks_however_often_they_run(fresh: Fresh) -> None:
    fresh.start_redis(
        config={"runs": {**STACK_CONFIG["runs"], "reapIntervalSeconds": 0.5, "archiveSweepSeconds": 1}}
    )
    flower, base = _flower(fresh)  # listening before anything is sent: it would hear every event
    try:
        worker = fresh.worker()  # asks for a reap as its consumer starts (workers.reaper.ReapOnConnect)
        beat = fresh.beat()
        _, url = fresh.api()

        def maintenance_ran() -> bool:
            sent, done = beat.output(), worker.output()
            return (
                sent.count("Sending due task reap-stalled-lanes") >= 4
                and sent.count("Sending due task archive-ended-subagents") >= 2
                # beat's reaps and the one the worker asked for itself
                and _succeeded(queues.REAP_TASK, done) >= 5
                and _succeeded(queues.ARCHIVE_TASK, done) >= 1
            )

        wait_for(maintenance_ran, 30, what="beat and the worker to send and run the maintenance tasks")
        with Client(url, TOKEN) as client:
            sent = client.post_message("agent:main:cron:flower-maintenance", "hi", timeout_seconds=20)
        assert isinstance(sent, SendResult)
        assert sent.status == "ok"

        def run_listed() -> dict[str, dict[str, Any]] | None:
            tasks = _tasks(base)
            return tasks if tasks.get(sent.run_id, {}).get("state") == "SUCCESS" else None

        # The run was sent after the maintenance tasks above had run: Flower has heard all of them by then.
        tasks = wait_for(run_listed, 30, what="Flower to list the run's task")
    finally:
        flower.stop()
    names = {task.get("name") for task in tasks.values()}
    assert queues.RUN_TASK in names
    assert not names & {queues.REAP_TASK, queues.ARCHIVE_TASK}, names


def _flower(fresh: Fresh) -> tuple[Role, str]:
    port = free_port()
    flower = Role(
        [sys.executable, "-m", "clawbus.api.cli", "flower", f"--port={port}"],
        {**fresh.env, "FLOWER_BASIC_AUTH": ":".join(AUTH)},
        fresh.root / "flower.log",
    ).start()
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _get(f"{base}/healthcheck") == "OK", 30, what="Flower to answer")
    except BaseException:
        flower.kill()
        raise
    return flower, base


def _succeeded(task: str, worker_log: str) -> int:
    return len(re.findall(rf"Task {re.escape(task)}\[[^\]]+\] succeeded", worker_log))


def _tasks(base: str) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = httpx.get(f"{base}/api/tasks", auth=AUTH, timeout=5).json()
    return tasks


def _get(url: str) -> str:
    try:
        return httpx.get(url, timeout=2).text
    except httpx.HTTPError:
        return ""
