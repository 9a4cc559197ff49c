"""api/routes/waterfall.py: a flow's runs and a session's sub-agent tree's runs as waterfall rows, over
fakeredis, with the runs made by the workers' own code in the test's process (workers.testing)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from clawbus.shared.config import Config
from clawbus.workers.testing import World
from tests.support.api_orchestra import MAIN, SCOPED_TOKEN, orchestra_config, yielded_boss


@pytest.fixture
def api_config() -> Config:
    return orchestra_config()


def waterfall(http: TestClient, path: str, **headers: str) -> dict[str, Any]:
    response = http.get(path, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_flows_waterfall_has_a_row_per_run_the_flow_names(http: TestClient, api_world: World) -> None:
    http.post("/v1/sessions/main/messages", json={"message": "hello", "timeoutSeconds": 0})
    http.put("/v1/sessions/cron:peer").raise_for_status()
    sent = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": "cron:peer", "message": "ping", "timeoutSeconds": 0},
        },
    ).json()["result"]["details"]
    api_world.drain()
    flow = http.get(f"/v1/flows/{sent['flowId']}").json()
    body = waterfall(http, f"/v1/flows/{sent['flowId']}/waterfall")
    rows = body["rows"]
    named = [step["runId"] for step in flow["steps"] if step.get("runId")]
    assert sorted(r["runId"] for r in rows) == sorted(named)
    assert [r["createdAt"] for r in rows] == sorted(r["createdAt"] for r in rows)
    primary = next(r for r in rows if r["runId"] == sent["flowId"])
    assert (primary["kind"], primary["sessionKey"], primary["depth"]) == ("send", "agent:main:cron:peer", 1)
    for r in rows:
        # The requester's turns at depth 0, the target's at 1.
        assert r["depth"] == (0 if r["sessionKey"] == MAIN else 1)
        assert r["status"] == "ok"
        assert r["createdAt"] <= r["startedAt"] <= r["endedAt"] <= body["now"]
        [step] = r["steps"]  # the script runtime answers each run in one model step
        assert r["startedAt"] <= step["startedAt"] <= step["endedAt"] <= r["endedAt"]
        assert "parkedMs" not in r
        assert "traceId" not in r


def test_a_sessions_waterfall_has_the_runs_of_its_whole_tree_by_depth(
    http: TestClient, api_world: World
) -> None:
    boss = yielded_boss(http, api_world)
    # Mid-way: the leaves are queued, not started; the orchestrator's first run ended after two model steps
    # (one spawned the leaves, one yielded; the yield's closing message is no step).
    rows = waterfall(http, "/v1/sessions/main/waterfall")["rows"]
    depth = {r["sessionKey"]: r["depth"] for r in rows}
    assert depth[MAIN] == 0
    assert depth[boss] == 1
    leaves = [r for r in rows if r["depth"] == 2]
    assert [(r["kind"], r["status"]) for r in leaves] == [("subagent", "queued")] * 3
    assert all("startedAt" not in r and "steps" not in r for r in leaves)
    [spawning] = [r for r in rows if r["sessionKey"] == boss]
    assert spawning["status"] == "ok"
    assert len(spawning["steps"]) == 2

    api_world.drain()
    rows = waterfall(http, "/v1/sessions/main/waterfall")["rows"]
    assert [r["createdAt"] for r in rows] == sorted(r["createdAt"] for r in rows)
    assert all(r["status"] == "ok" for r in rows)
    assert {"subagent", "report"} <= {r["kind"] for r in rows if r["sessionKey"] == boss}
    # Each leaf: its task, and no model step after it (its reply is its report).
    assert sorted(r["kind"] for r in rows if r["depth"] == 2) == ["subagent"] * 3
    # The orchestrator's own view: its tree, one level up.
    below = waterfall(http, f"/v1/sessions/{boss}/waterfall")["rows"]
    assert {r["depth"] for r in below} == {0, 1}
    assert {r["runId"] for r in below} == {r["runId"] for r in rows if r["depth"] >= 1}
    # The newest runs only, when asked.
    newest = waterfall(http, "/v1/sessions/main/waterfall?limit=2")["rows"]
    assert [r["runId"] for r in newest] == [r["runId"] for r in rows][-2:]


def test_a_session_with_no_runs_has_an_empty_waterfall(http: TestClient) -> None:
    assert waterfall(http, "/v1/sessions/cron:quiet/waterfall")["rows"] == []


def test_a_token_that_may_not_see_them_learns_nothing(http: TestClient, api_world: World) -> None:
    http.put("/v1/sessions/cron:peer").raise_for_status()
    sent = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": "cron:peer", "message": "ping", "timeoutSeconds": 0},
        },
    ).json()["result"]["details"]
    api_world.drain()
    scoped = {"Authorization": f"Bearer {SCOPED_TOKEN}"}
    real = http.get(f"/v1/flows/{sent['flowId']}/waterfall", headers=scoped)
    made_up = http.get("/v1/flows/00000000-0000-4000-8000-000000000000/waterfall", headers=scoped)
    assert (real.status_code, made_up.status_code) == (404, 404)
    assert real.json()["error"]["type"] == made_up.json()["error"]["type"] == "not_found"
    # A session key of another agent: 403 whether or not the session exists (decided from the key alone).
    there = http.get("/v1/sessions/agent:main:cron:peer/waterfall", headers=scoped)
    not_there = http.get("/v1/sessions/agent:main:cron:nobody/waterfall", headers=scoped)
    assert (there.status_code, not_there.status_code) == (403, 403)
    assert there.json() == not_there.json()
    assert http.get("/v1/flows/not-a-uuid/waterfall").status_code == 400
