"""Flower watching the fleet: after a sessions_send, its API lists the exchange's tasks under their names,
linked to one root (the flow), with arguments that say which run, session or flow each one is."""

from __future__ import annotations

import sys
from typing import Any

import httpx

from api.client import Client
from shared.processes import free_port
from tests.integration.conftest import TOKEN, Fresh
from tests.integration.test_delivery import SECRET, send_with_announce_to
from tests.integration.test_flows import finished
from tests.support.fake_http import fake_server
from tests.support.processes import Role, wait_for

AUTH = ("ops", "flower-secret")


def test_flower_shows_a_flows_tasks_linked_to_its_root(fresh: Fresh) -> None:
    with fake_server((200, {"ok": True})) as receiver:
        # The announce goes out through a webhook: a delivery to an outside channel has a task of its own.
        fresh.start_redis(
            config={"channels": {"crm": {"type": "webhook", "url": receiver.url, "secret": SECRET}}}
        )
        fresh.worker()
        _, url = fresh.api()
        port = free_port()
        flower = Role(
            [sys.executable, "-m", "api.cli", "flower", f"--port={port}"],
            {**fresh.env, "FLOWER_BASIC_AUTH": ":".join(AUTH)},
            fresh.root / "flower.log",
        ).start()
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: _get(f"{base}/healthcheck") == "OK", 30, what="Flower to answer")
            assert httpx.get(f"{base}/api/tasks").status_code == 401  # its basic auth is on
            with Client(url, TOKEN) as client:
                flow_id = send_with_announce_to(client, "crm")
                flow = finished(client, flow_id)

            def flow_tasks() -> dict[str, dict[str, Any]] | None:
                tasks: dict[str, dict[str, Any]] = httpx.get(f"{base}/api/tasks", auth=AUTH).json()
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


def _get(url: str) -> str:
    try:
        return httpx.get(url, timeout=2).text
    except httpx.HTTPError:
        return ""
