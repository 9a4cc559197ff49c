"""api/openapi_links.py: the OpenAPI links from the answers that carry ids to the operations that take them
name operations and parameters the document has, and followed on real answers they lead to 200s."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from clawbus.api.openapi_links import LINKS, add_links

# What an operation a link leads to needs besides the id the link fills, to answer 200.
NEEDS: dict[tuple[str, str], dict[str, Any]] = {
    ("get", "/v1/runs/{run_id}/wait"): {"params": {"timeout": 0}},  # the run stays queued: no worker here
    ("patch", "/v1/sessions/{key}"): {"json": {}},
    ("post", "/v1/sessions/{key}/messages"): {"json": {"message": "hi", "timeoutSeconds": 0}},
}
# The links that take a runId, and those that take a session's key.
RUN_LINKS = {"GetRun", "WaitRun", "RunEvents", "CancelRun"}
SESSION_LINKS = {"GetSession", "PatchSession", "SessionStatus", "ListSubagents", "PostMessage"}


def document(http: TestClient) -> dict[str, Any]:
    doc: dict[str, Any] = http.get("/openapi.json").json()
    return doc


def operations(doc: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Every operation by its operationId: (method, path, operation)."""
    return {
        op["operationId"]: (method, path, op)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
    }


def links_of(doc: dict[str, Any], method: str, path: str, status: str) -> dict[str, Any]:
    found: dict[str, Any] = doc["paths"][path][method]["responses"][status].get("links", {})
    return found


def resolve(expression: str, body: Any) -> Any:
    """A ``$response.body#/json/pointer`` runtime expression on an answer's body; None where it points at
    nothing."""
    prefix = "$response.body#"
    assert expression.startswith(prefix), expression
    value = body
    for token in expression.removeprefix(prefix).split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        elif isinstance(value, dict) and token in value:
            value = value[token]
        else:
            return None
    return value


def follow(http: TestClient, links: dict[str, Any], body: Any) -> dict[str, int]:
    """Each link whose expression finds an id in ``body``, followed: its name and the linked operation's
    status."""
    by_id = operations(document(http))
    statuses: dict[str, int] = {}
    for name, link in links.items():
        method, path, _ = by_id[link["operationId"]]
        [(parameter, expression)] = link["parameters"].items()
        value = resolve(expression, body)
        if value is None:
            continue
        url = path.replace("{" + parameter + "}", quote(str(value), safe=":"))
        statuses[name] = http.request(method.upper(), url, **NEEDS.get((method, path), {})).status_code
    return statuses


def test_every_link_names_an_operation_of_the_document_and_fills_its_parameters(http: TestClient) -> None:
    doc = document(http)
    by_id = operations(doc)
    seen = 0
    for (method, path), (statuses, _) in LINKS.items():
        for status in statuses:
            links = links_of(doc, method, path, status)
            assert links, f"{method.upper()} {path} {status} has no links"
            for name, link in links.items():
                assert link["operationId"] in by_id, name
                _, _, target = by_id[link["operationId"]]
                names = {p["name"] for p in target.get("parameters", [])}
                assert set(link["parameters"]) <= names, (name, link["parameters"], names)
                assert all(e.startswith("$response.body#/") for e in link["parameters"].values())
                seen += 1
    assert seen >= 30


def test_a_link_to_a_route_the_document_lacks_fails_the_build() -> None:
    with pytest.raises(LookupError, match=re.escape("no operation GET /v1/runs/{run_id}")):
        add_links({"paths": {"/tools/invoke": {"post": {"responses": {"200": {}}}}}})


def test_a_sends_links_lead_to_its_run_flow_and_target_session(http: TestClient) -> None:
    http.put("/v1/sessions/cron:x").raise_for_status()  # a send opens no session
    send = {"tool": "sessions_send", "args": {"sessionKey": "cron:x", "message": "hi", "timeoutSeconds": 0}}
    answer = http.post("/tools/invoke", json=send)
    assert answer.json()["result"]["details"]["status"] == "accepted"
    statuses = follow(http, links_of(document(http), "post", "/tools/invoke", "200"), answer.json())
    assert statuses == dict.fromkeys(RUN_LINKS | {"GetFlow", "CancelFlow", "GetSession"}, 200)


def test_a_spawns_links_lead_to_its_run_and_child_session(http: TestClient) -> None:
    spawn = {"tool": "sessions_spawn", "args": {"task": "t", "label": "kid"}}
    answer = http.post("/tools/invoke", json=spawn)
    assert answer.json()["result"]["details"]["status"] == "accepted"
    statuses = follow(http, links_of(document(http), "post", "/tools/invoke", "200"), answer.json())
    assert statuses == dict.fromkeys(RUN_LINKS | {"GetSessionOfChild"}, 200)


def test_a_chat_messages_links_lead_to_its_run_and_session(http: TestClient) -> None:
    answer = http.post("/v1/sessions/main/messages", json={"message": "hi", "timeoutSeconds": 0})
    links = links_of(document(http), "post", "/v1/sessions/{key}/messages", "200")
    assert set(links) >= {"GetFlow", "CancelFlow"}  # a message's answer carries a flowId when it has one
    statuses = follow(http, links, answer.json())
    assert statuses == dict.fromkeys(RUN_LINKS | {"GetSession"}, 200)


def test_the_owners_listing_links_its_first_row_to_the_session_routes(http: TestClient) -> None:
    http.put("/v1/sessions/cron:x").raise_for_status()
    answer = http.get("/v1/sessions")
    statuses = follow(http, links_of(document(http), "get", "/v1/sessions", "200"), answer.json())
    assert statuses == dict.fromkeys(SESSION_LINKS, 200)


@pytest.mark.parametrize(("method", "status"), [("put", "201"), ("put", "200"), ("get", "200")])
def test_a_sessions_answer_links_its_key_to_the_session_routes(
    http: TestClient, method: str, status: str
) -> None:
    if status == "200":
        http.put("/v1/sessions/cron:x").raise_for_status()
    answer = http.request(method.upper(), "/v1/sessions/cron:x")
    assert answer.status_code == int(status)
    statuses = follow(http, links_of(document(http), method, "/v1/sessions/{key}", status), answer.json())
    assert statuses == dict.fromkeys(SESSION_LINKS, 200)
