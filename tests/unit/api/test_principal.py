"""api/routes/principal.py: GET /v1/me says who a token is, which agents it may act for and their main
sessions (what the console lists and acts as), and the deployment's trace link (never its tracing secrets)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from clawbus.api.app import create_app
from clawbus.api.services import Services
from tests.conftest import make_config
from tests.support.api_app import TOKEN
from tests.support.scoped_tokens import OWNER, RESEARCH, as_token, scoped_config, scoped_http  # noqa: F401 (fixtures)


def test_a_scoped_token_is_told_its_agents_and_their_main_sessions(http: TestClient) -> None:
    me = http.get("/v1/me", headers=as_token(RESEARCH))
    assert me.status_code == 200
    assert me.json() == {
        "name": "research-bot",
        "owner": False,
        "agents": ["research"],
        "mainSessions": ["agent:research:main"],
        "traceUrl": None,
    }


def test_an_owner_token_for_every_agent_is_told_each_configured_agent(http: TestClient) -> None:
    me = http.get("/v1/me", headers=as_token(OWNER)).json()
    assert me["owner"] is True
    assert me["mainSessions"] == [f"agent:{agent}:main" for agent in me["agents"]]
    assert "research" in me["agents"]


def test_a_wrong_token_is_401(http: TestClient) -> None:
    assert http.get("/v1/me", headers=as_token("nope")).status_code == 401


def test_the_trace_link_is_told_and_the_tracing_headers_are_not(services: Callable[..., Services]) -> None:
    template = "https://traces.example/trace/{traceId}?from=clawbus"
    traced = make_config(
        {
            "gateway": {"auth": {"tokens": [TOKEN]}},
            "telemetry": {
                "tracing": {"traceUrl": template, "headers": {"Authorization": "Bearer otlp-secret"}}
            },
        }
    )
    with TestClient(create_app(traced, services=services)) as client:
        answer = client.get("/v1/me", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert answer.json()["traceUrl"] == template
    assert "otlp-secret" not in answer.text
