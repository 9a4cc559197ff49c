"""api/: auth, the error envelope, body limits and the OpenAPI document, in-process."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from clawbus.api import app as app_module
from clawbus.api.app import create_app
from clawbus.api.processes import wait_for
from clawbus.api.services import Services
from clawbus.shared.base.gc_pauses import FrozenHeap
from clawbus.shared.config import Config, ConfigError
from clawbus.shared.store import Store
from clawbus.workers.testing import InlineDispatcher, World
from tests.conftest import make_config
from tests.support.api_app import TOKEN


def test_health_needs_no_token(http: TestClient) -> None:
    http.headers.pop("Authorization")
    assert http.get("/healthz").json() == {"ok": True}
    assert http.get("/readyz").json() == {"ok": True, "redis": "ok", "workers": 0}


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic dXNlcjpwYXNz", "Bearer "])
def test_tools_need_a_valid_bearer_token(http: TestClient, header: str | None) -> None:
    http.headers.pop("Authorization")
    headers = {"Authorization": header} if header else {}
    response = http.post("/tools/invoke", json={"tool": "sessions_list"}, headers=headers)
    assert response.status_code == 401
    # The release's words (docs/contract.md, "On the wire").
    assert response.json() == {"error": {"message": "Unauthorized", "type": "unauthorized"}}
    assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("path", ["/v1/sessions/main", "/v1/runs/abc", "/v1/runs/abc/wait"])
def test_every_v1_route_needs_a_token(http: TestClient, path: str) -> None:
    http.headers.pop("Authorization")
    assert http.get(path).status_code == 401


def test_an_unknown_tool_is_404(http: TestClient) -> None:
    response = http.post("/tools/invoke", json={"tool": "rm_rf"})
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "Tool not available: rm_rf"


def test_a_missing_argument_is_a_400_tool_error_in_the_releases_words(http: TestClient) -> None:
    response = http.post("/tools/invoke", json={"tool": "sessions_send", "args": {"sessionKey": "main"}})
    assert response.status_code == 400
    assert response.json() == {
        "ok": False,
        "error": {"type": "tool_error", "message": "message required", "field": "message"},
    }


@pytest.mark.parametrize(
    ("tool", "args", "error"),
    [
        ("sessions_history", {"sessionKey": "agent:main:ma\x01in"}, "Invalid session key"),
        ("sessions_history", {"sessionKey": "x" * 513}, "Invalid session key"),
        ("sessions_send", {"sessionKey": "cron:\x1b[2Jjob", "message": "m"}, "Invalid session key"),
        ("sessions_send", {"label": "ops\x00", "message": "m"}, "No session found with label"),
        ("sessions_spawn", {"task": "t", "agentId": "re\u0085search"}, 'Invalid agentId "re\u0085search"'),
    ],
)
def test_keys_labels_and_agent_ids_with_control_characters_or_too_long_are_refused(
    http: TestClient, api_store: Store, tool: str, args: dict[str, object], error: str
) -> None:
    response = http.post("/tools/invoke", json={"tool": tool, "args": args})
    assert response.status_code == 200
    details = response.json()["result"]["details"]
    assert details["status"] == "error"
    assert details["error"].startswith(error)
    assert api_store.redis.keys("*") == []


def test_a_bad_caller_key_is_400_naming_session_key(http: TestClient) -> None:
    response = http.post("/tools/invoke", json={"tool": "sessions_list", "sessionKey": "agent:ghost:main"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "sessionKey"


def test_malformed_json_is_400_in_the_gateway_envelope(http: TestClient) -> None:
    response = http.post("/tools/invoke", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("Expecting property name")


@pytest.mark.parametrize(
    "body", [b"", b"  ", b"null", b"[1]", b'"x"', b"{}", b'{"tool": 5}', b'{"name": 5, "tool": "x"}']
)
def test_a_body_without_a_tool_name_is_400_tools_invoke_requires_name(http: TestClient, body: bytes) -> None:
    response = http.post("/tools/invoke", content=body)
    assert response.status_code == 400
    assert response.json() == {
        "ok": False,
        "error": {"type": "invalid_request", "message": "tools.invoke requires name"},
    }


def test_name_wins_over_tool_and_args_that_are_no_object_are_none(http: TestClient) -> None:
    response = http.post("/tools/invoke", json={"name": " agents_list ", "tool": "nope", "args": [1, 2]})
    assert response.status_code == 200
    assert response.json()["result"]["details"]["requester"] == "main"


def test_get_on_tools_invoke_is_a_plain_405(http: TestClient) -> None:
    response = http.get("/tools/invoke")
    assert (response.status_code, response.text, response.headers["allow"]) == (
        405,
        "Method Not Allowed",
        "POST",
    )


def test_an_oversized_message_names_the_field(http: TestClient, api_store: Store) -> None:
    response = http.post(
        "/tools/invoke", json={"tool": "sessions_send", "args": {"sessionKey": "main", "message": "x" * 2000}}
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "type": "tool_error",
        "message": "message: too large: 2000 bytes (limit 1024)",
        "field": "message",
    }
    assert api_store.redis.keys("clawbus:*") == []


def test_a_body_over_the_limit_is_413(http: TestClient) -> None:
    response = http.post("/tools/invoke", json={"tool": "sessions_send", "args": {"message": "x" * 10_000}})
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "too_large"


def test_fire_and_forget_send_is_accepted_and_dispatched(
    http: TestClient, recorded: InlineDispatcher
) -> None:
    http.put("/v1/sessions/cron:x").raise_for_status()  # a send opens no session
    response = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": "cron:x", "message": "hi", "timeoutSeconds": 0},
        },
    )
    assert response.status_code == 200
    result = response.json()["result"]["details"]
    assert result["status"] == "accepted"
    assert result["sessionKey"] == "agent:main:cron:x"
    assert [h.run_id for h in recorded.heads] == [result["runId"]]


def test_a_send_opens_no_session_and_put_opens_one(http: TestClient, api_store: Store) -> None:
    send = {"tool": "sessions_send", "args": {"sessionKey": "cron:y", "message": "hi", "timeoutSeconds": 0}}
    refused = http.post("/tools/invoke", json=send).json()["result"]["details"]
    assert refused == {
        "runId": refused["runId"],
        "status": "error",
        "error": "No session found: agent:main:cron:y",
        "sessionKey": "agent:main:cron:y",
    }
    assert http.get("/v1/sessions/cron:y").status_code == 404
    opened = http.put("/v1/sessions/cron:y")
    assert (opened.status_code, opened.json()["key"]) == (201, "agent:main:cron:y")
    again = http.put("/v1/sessions/cron:y")
    assert (again.status_code, again.json()["sessionId"]) == (200, opened.json()["sessionId"])
    assert http.post("/tools/invoke", json=send).json()["result"]["details"]["status"] == "accepted"
    assert http.put("/v1/sessions/agent:ghost:x").status_code == 404


def test_inbound_messages_create_the_session(http: TestClient) -> None:
    response = http.post(
        "/v1/sessions/main/messages",
        json={"message": "hi", "channel": "webchat", "to": "u1", "timeoutSeconds": 0},
    )
    assert response.json()["status"] == "accepted"
    entry = http.get("/v1/sessions/main").json()
    assert entry["deliveryContext"] == {"channel": "webchat", "to": "u1"}
    assert http.get(f"/v1/sessions/{entry['sessionId']}").json()["key"] == "agent:main:main"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "message"),
        ({"message": "m", "timeoutSeconds": -1}, "timeoutSeconds"),
        ({"message": "m", "x": 1}, "x"),
        ({"message": "m", "chatType": "room"}, "chatType"),
    ],
)
def test_inbound_bad_bodies_are_400_naming_the_field(
    http: TestClient, body: dict[str, object], field: str
) -> None:
    response = http.post("/v1/sessions/main/messages", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_inbound_to_an_unknown_agent_is_404(http: TestClient) -> None:
    response = http.post("/v1/sessions/agent:ghost:main/messages", json={"message": "hi"})
    assert response.status_code == 404


def test_patch_validates_send_policy_with_the_spec_text(http: TestClient) -> None:
    http.post("/v1/sessions/main/messages", json={"message": "hi", "timeoutSeconds": 0})
    bad = http.patch("/v1/sessions/main", json={"sendPolicy": "sometimes"})
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == 'sendPolicy: invalid sendPolicy (use "allow"|"deny")'
    assert http.patch("/v1/sessions/main", json={"sendPolicy": "deny"}).json()["sendPolicy"] == "deny"
    assert "sendPolicy" not in http.patch("/v1/sessions/main", json={"sendPolicy": None}).json()


def test_patch_checks_model_and_thinking_and_label_conflicts(http: TestClient) -> None:
    for key in ("main", "cron:x"):
        http.post(f"/v1/sessions/{key}/messages", json={"message": "hi", "timeoutSeconds": 0})
    assert http.patch("/v1/sessions/main", json={"model": "nope/x"}).json()["error"]["message"] == (
        "model: invalid model: nope/x"
    )
    assert http.patch("/v1/sessions/main", json={"thinkingLevel": "max"}).status_code == 400
    assert http.patch("/v1/sessions/main", json={"label": "home", "model": "echo/echo"}).status_code == 200
    conflict = http.patch("/v1/sessions/cron:x", json={"label": "home"})
    assert conflict.status_code == 409
    assert conflict.json()["error"]["field"] == "label"


def test_patch_sets_and_clears_the_display_name(http: TestClient) -> None:
    http.post("/v1/sessions/main/messages", json={"message": "hi", "timeoutSeconds": 0})
    assert http.patch("/v1/sessions/main", json={"displayName": "Home"}).json()["displayName"] == "Home"
    assert http.get("/v1/sessions/main").json()["displayName"] == "Home"
    assert "displayName" not in http.patch("/v1/sessions/main", json={"displayName": None}).json()
    bad = http.patch("/v1/sessions/main", json={"displayName": " padded "})
    assert bad.status_code == 400
    assert bad.json()["error"]["field"] == "displayName"


def test_patch_of_an_unknown_session_is_404(http: TestClient) -> None:
    assert http.patch("/v1/sessions/cron:none", json={"label": "x"}).status_code == 404
    assert http.get("/v1/sessions/cron:none").status_code == 404


def test_unknown_runs_are_404_and_bad_ids_400(http: TestClient) -> None:
    assert http.get("/v1/runs/nope").status_code == 404
    assert http.get("/v1/runs/nope/wait", params={"timeout": 0}).status_code == 404
    assert http.get("/v1/runs/bad%20id").status_code == 400
    assert http.get("/v1/runs/x/wait", params={"timeout": -1}).json()["error"]["field"] == "timeout"


def test_the_openapi_document_describes_the_routes(http: TestClient) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    assert {
        "/tools/invoke",
        "/v1/sessions/{key}",
        "/v1/sessions/{key}/messages",
        "/v1/runs/{run_id}",
        "/v1/runs/{run_id}/wait",
        "/healthz",
        "/readyz",
    } <= set(paths)


def test_an_api_without_tokens_refuses_to_start() -> None:
    with pytest.raises(ConfigError, match="no API tokens"):
        create_app(make_config())


def test_runs_and_flows_come_back_with_secrets_redacted(http: TestClient, api_world: World) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwx1234"
    http.put("/v1/sessions/cron:keys").raise_for_status()
    sent = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": "cron:keys", "message": f"my key is {secret}", "timeoutSeconds": 0},
        },
    ).json()["result"]["details"]
    api_world.drain()
    run = http.get(f"/v1/runs/{sent['runId']}").json()
    flow = http.get(f"/v1/flows/{sent['flowId']}").json()
    assert run["reply"] == "echo: my key is sk-abc…1234"
    assert flow["message"] == "my key is sk-abc…1234"
    assert secret not in str(run) + str(flow)


@pytest.mark.parametrize("after", ["0-20000000000000000000", "99999999999999999999-0", "x-1", "1"])
def test_an_out_of_range_stream_id_is_400_not_500(http: TestClient, after: str) -> None:
    response = http.get("/v1/channels/log/x/messages", params={"after": after})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "after"


@pytest.mark.parametrize(
    ("tools", "tool", "status"),
    [
        ({}, "sessions_send", 400),  # clawbus keeps sends and spawns allowed
        ({"deny": ["Sessions_Send"]}, "sessions_send", 404),
        ({}, "exec", 404),
        ({"deny": ["agents_list"]}, "agents_list", 404),
    ],
)
def test_gateway_tools_deny_a_tool_as_not_available(
    services: Callable[[Config], Services], tools: dict[str, list[str]], tool: str, status: int
) -> None:
    config = make_config({"gateway": {"auth": {"tokens": [TOKEN]}, "tools": tools}})
    with TestClient(create_app(config, services)) as client:
        response = client.post(
            "/tools/invoke", json={"tool": tool, "args": {}}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
    assert response.status_code == status
    if status == 404:
        assert response.json() == {
            "ok": False,
            "error": {"type": "not_found", "message": f"Tool not available: {tool}"},
        }


@pytest.mark.usefixtures("thawed_collector")
def test_the_api_process_app_freezes_its_heap_after_a_full_collection(
    api_config: Config, services: Callable[[Config], Services]
) -> None:
    with TestClient(create_app(api_config, services=services, freeze_heap=True)):
        gc.collect()
        wait_for(lambda: gc.get_freeze_count() > 0, 10, what="the heap frozen")


@pytest.mark.usefixtures("thawed_collector")
def test_an_app_made_inside_another_process_leaves_its_collector_alone(
    api_config: Config, services: Callable[[Config], Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[FrozenHeap] = []

    class Recorded(FrozenHeap):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

    monkeypatch.setattr(app_module, "FrozenHeap", Recorded)
    with TestClient(create_app(api_config, services=services)) as client:
        assert client.get("/healthz").status_code == 200

    assert made == []
