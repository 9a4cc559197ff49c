"""api/routes/subagents.py: a session's sub-agents over HTTP (list, info, kill, steer) and its status card,
on an orchestration tree built in the test's own process (the script runtime, workers.testing)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.wire.models import RunStatus
from clawbus.workers.testing import World
from tests.support.api_orchestra import MAIN, SCOPED_TOKEN, SECRET, orchestra_config, yielded_boss


@pytest.fixture
def api_config() -> Config:
    return orchestra_config()


@pytest.fixture
def boss(http: TestClient, api_world: World) -> str:
    return yielded_boss(http, api_world)


def rows(http: TestClient, session: str, **params: Any) -> list[dict[str, Any]]:
    response = http.get(f"/v1/sessions/{session}/subagents", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["count"] == len(body["subagents"])
    listed: list[dict[str, Any]] = body["subagents"]
    return listed


def test_a_sessions_subagents_are_listed_as_the_session_sees_them(http: TestClient, boss: str) -> None:
    [row] = rows(http, "main")
    assert (row["key"], row["label"], row["status"], row["waitingFor"]) == (boss, "boss", "waiting", 3)
    assert (row["depth"], row["role"], row["spawnedBy"], row["pendingReport"]) == (
        1,
        "orchestrator",
        MAIN,
        True,
    )
    tree = rows(http, "main", recursive="true")
    assert [(r["depth"], r["status"]) for r in tree] == [(1, "waiting")] + [(2, "queued")] * 3
    assert {r["spawnedBy"] for r in tree[1:]} == {boss}
    # The orchestrator's own view: its three leaves, its direct children.
    assert sorted(r["label"] for r in rows(http, boss)) == ["a", "b", "c"]


def test_a_session_that_spawned_nothing_lists_no_subagents(http: TestClient) -> None:
    listed = http.get("/v1/sessions/cron:quiet/subagents").json()
    assert (listed["status"], listed["action"], listed["requesterSessionKey"]) == (
        "ok",
        "list",
        "agent:main:cron:quiet",
    )
    assert (listed["total"], listed["tasks"], listed["active"], listed["recent"]) == (0, [], [], [])
    assert (listed["count"], listed["subagents"]) == (0, [])


def test_info_on_a_subagent_by_label_gives_its_row_and_latest_run(
    http: TestClient, boss: str, api_store: Store
) -> None:
    info = http.get("/v1/sessions/main/subagents/boss").json()
    assert info["action"] == "info"
    assert (info["subagent"]["key"], info["subagent"]["status"]) == (boss, "waiting")
    # Its latest run is the one that spawned the leaves and yielded.
    last = api_store.runs.get(info["lastRunId"])
    assert last is not None
    assert (last.session_key, info["lastRunStatus"]) == (boss, "ok")
    assert info["createdAt"] <= info["updatedAt"]


def test_info_shows_a_subagents_last_error_redacted(http: TestClient, api_world: World) -> None:
    http.post("/v1/sessions/main/messages", json={"message": "hello", "timeoutSeconds": 0})
    http.post("/tools/invoke", json={"tool": "sessions_spawn", "args": {"task": "leak", "label": "leaky"}})
    api_world.drain(follow_inline=True)
    info = http.get("/v1/sessions/main/subagents/leaky").json()
    assert info["lastRunStatus"] == "error"
    assert "sk-abc…1234" in info["lastError"]
    assert SECRET not in str(info)


def test_killing_by_label_stops_the_whole_subtree_and_answers_the_killed(
    http: TestClient, boss: str, api_store: Store, api_world: World
) -> None:
    response = http.post("/v1/sessions/main/subagents/boss/kill")
    assert response.status_code == 200, response.text
    killed = response.json()["killed"]
    assert killed[0] == boss  # the target first, then what it spawned
    assert sorted(killed[1:]) == sorted(api_store.sessions.children(boss))
    api_world.drain(follow_inline=True)
    assert {r["status"] for r in rows(http, "main", recursive="true")} == {"killed"}
    leaves = [api_store.sessions.get(key) for key in api_store.sessions.children(boss)]
    leaf_runs = [api_store.runs.get(leaf.spawn_flow_id) for leaf in leaves if leaf and leaf.spawn_flow_id]
    assert {run.status for run in leaf_runs if run} == {RunStatus.ABORTED}  # queued, they never started


def test_killing_all_stops_every_child_and_a_second_kill_stops_nothing(http: TestClient, boss: str) -> None:
    first = http.post("/v1/sessions/main/subagents/all/kill").json()
    assert len(first["killed"]) == 4
    assert http.post("/v1/sessions/main/subagents/all/kill").json() == {"action": "kill", "killed": []}


def test_a_grandchild_is_killed_by_its_key_from_the_top_of_the_tree(http: TestClient, boss: str) -> None:
    leaf = rows(http, boss)[0]["key"]
    assert http.post(f"/v1/sessions/main/subagents/{leaf}/kill").json()["killed"] == [leaf]
    assert {r["key"]: r["status"] for r in rows(http, "main", recursive="true")}[leaf] == "killed"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/v1/sessions/main/subagents/nobody/kill"),
        ("get", "/v1/sessions/main/subagents/nobody"),
    ],
)
def test_a_target_that_is_no_subagent_of_the_session_is_404_naming_it(
    http: TestClient, boss: str, method: str, path: str
) -> None:
    response = http.request(method.upper(), path)
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["field"] == "target"
    assert "No sub-agent of this session matches 'nobody'" in error["message"]


def test_a_label_names_only_a_direct_child(http: TestClient, boss: str) -> None:
    """Leaf ``a`` is boss's child: from main, its label is no target (its key is)."""
    assert http.post("/v1/sessions/main/subagents/a/kill").status_code == 404
    assert http.post(f"/v1/sessions/{boss}/subagents/a/kill").status_code == 200


def test_a_steer_to_a_queued_subagent_becomes_a_run_of_its_own(
    http: TestClient, boss: str, api_store: Store
) -> None:
    leaf = rows(http, boss)[0]["key"]
    response = http.post(f"/v1/sessions/{boss}/subagents/{leaf}/steer", json={"message": "hurry up"})
    assert response.status_code == 200, response.text
    steered = response.json()
    assert (steered["target"], steered["delivered"]) == (leaf, "new_run")
    run = api_store.runs.get(steered["runId"])
    assert run is not None
    assert (run.kind, run.session_key) == ("steer", leaf)


def test_a_steer_repeated_with_its_idempotency_key_steers_once(http: TestClient, boss: str) -> None:
    leaf = rows(http, boss)[0]["key"]
    headers = {"Idempotency-Key": "steer-once"}
    path = f"/v1/sessions/{boss}/subagents/{leaf}/steer"
    first = http.post(path, json={"message": "hurry up"}, headers=headers).json()
    again = http.post(path, json={"message": "hurry up"}, headers=headers).json()
    assert again["runId"] == first["runId"]


def test_steering_a_killed_subagent_is_403_saying_so(http: TestClient, boss: str) -> None:
    http.post("/v1/sessions/main/subagents/boss/kill")
    response = http.post("/v1/sessions/main/subagents/boss/steer", json={"message": "still there?"})
    assert response.status_code == 403
    assert response.json()["error"]["message"] == f"{boss} was killed: there is no one to steer"


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "message"), ({"message": "   "}, "message"), ({"message": "x", "extra": 1}, "extra")],
)
def test_a_bad_steer_body_is_400_naming_the_field(
    http: TestClient, boss: str, body: dict[str, Any], field: str
) -> None:
    response = http.post("/v1/sessions/main/subagents/boss/steer", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_a_steer_over_the_message_limit_is_400_naming_the_message(
    http: TestClient, boss: str, api_config: Config
) -> None:
    too_long = "x" * (api_config.gateway.limits.message_bytes + 1)
    response = http.post("/v1/sessions/main/subagents/boss/steer", json={"message": too_long})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "message"


def test_a_target_with_a_control_character_is_400(http: TestClient) -> None:
    response = http.post("/v1/sessions/main/subagents/bo%01ss/kill")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "target"


def test_the_status_card_of_a_yielded_orchestrator_says_it_waits_for_its_children(
    http: TestClient, boss: str
) -> None:
    card = http.get(f"/v1/sessions/{boss}/status").json()
    assert card["state"] == "waiting for 3 children"
    assert (card["childrenPending"], card["spawnDepth"], card["role"]) == (3, 1, "orchestrator")
    assert (card["modelRef"], card["modelSource"]) == ("script/orchestra", "agent")
    assert card["statusText"].startswith("🦞 clawbus ")
    assert http.get("/v1/sessions/main/status").json()["sessionKey"] == MAIN


def test_the_status_of_a_session_that_never_ran_is_404(http: TestClient) -> None:
    response = http.get("/v1/sessions/cron:never/status")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Session not found: cron:never"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/sessions/main/subagents"),
        ("get", "/v1/sessions/main/subagents/boss"),
        ("post", "/v1/sessions/main/subagents/all/kill"),
        ("get", "/v1/sessions/main/status"),
    ],
)
def test_a_token_for_another_agent_is_403_and_stops_nothing(
    http: TestClient, boss: str, method: str, path: str
) -> None:
    response = http.request(method.upper(), path, headers={"Authorization": f"Bearer {SCOPED_TOKEN}"})
    assert response.status_code == 403
    assert response.json()["error"]["message"] == 'this token may not act for agent "main"'
    assert rows(http, "main")[0]["status"] == "waiting"


def test_a_leafs_subagents_are_listed_though_its_model_has_no_such_tool(http: TestClient, boss: str) -> None:
    """The tool set keeps a leaf's model from calling ``subagents``; the caller here is the token's
    principal, who may look at any session of its agents."""
    leaf = rows(http, boss)[0]["key"]
    assert rows(http, leaf) == []
    assert http.post(f"/v1/sessions/{leaf}/subagents/all/kill").json()["killed"] == []


def test_the_routes_are_in_the_published_schema(http: TestClient) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    assert set(paths["/v1/sessions/{key}/subagents"]) == {"get"}
    assert set(paths["/v1/sessions/{key}/subagents/{target}"]) == {"get"}
    assert set(paths["/v1/sessions/{key}/subagents/{target}/kill"]) == {"post"}
    assert set(paths["/v1/sessions/{key}/subagents/{target}/steer"]) == {"post"}
    assert set(paths["/v1/sessions/{key}/status"]) == {"get"}


# -- the same tools over /tools/invoke, as the release answers them --------------------------------------


def invoke(http: TestClient, tool: str, args: dict[str, Any], **body: Any) -> Any:
    return http.post("/tools/invoke", json={"tool": tool, "args": args, **body})


def test_an_unsupported_action_is_a_200_result_and_a_top_level_action_is_read(http: TestClient) -> None:
    response = invoke(http, "subagents", {"action": "explode"})
    assert response.status_code == 200
    assert response.json()["result"]["details"] == {"status": "error", "error": "Unsupported action."}
    merged = invoke(http, "subagents", {"taskId": "nope"}, action="cancel").json()
    assert merged["result"]["details"] == {"status": "forbidden", "error": "Task outside session tree."}


def test_a_bad_recent_minutes_is_a_400_tool_error_in_the_releases_words(http: TestClient) -> None:
    response = invoke(http, "subagents", {"action": "list", "recentMinutes": 0})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "tool_error"
    assert response.json()["error"]["message"] == "recentMinutes must be a positive integer"


def test_session_status_answers_its_card_as_the_content_text(http: TestClient, boss: str) -> None:
    response = invoke(http, "session_status", {"sessionKey": boss})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["content"] == [{"type": "text", "text": result["details"]["statusText"]}]
    assert result["details"]["sessionKey"] == boss
    unknown = invoke(http, "session_status", {"sessionKey": "agent:main:nope"})
    assert (unknown.status_code, unknown.json()["result"]["details"]) == (
        200,
        {"status": "error", "error": "Unknown sessionKey: agent:main:nope"},
    )
