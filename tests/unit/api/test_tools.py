"""api/routes/tools.py: ``GET /v1/tools``, the tool schemas for LLM applications."""

from __future__ import annotations

from fastapi.testclient import TestClient

from clawbus.shared.tools.registry import TOOLS


def test_tools_come_in_the_openai_function_format_by_default(http: TestClient) -> None:
    body = http.get("/v1/tools").json()
    assert body["format"] == "openai"
    assert [t["function"]["name"] for t in body["tools"]] == list(TOOLS)
    send = next(t for t in body["tools"] if t["function"]["name"] == "sessions_send")
    assert send["function"]["parameters"]["required"] == ["message"]


def test_tools_come_in_the_anthropic_format_on_request(http: TestClient) -> None:
    tools = http.get("/v1/tools", params={"format": "anthropic"}).json()["tools"]
    assert {t["name"] for t in tools} == set(TOOLS)
    assert all(t["input_schema"]["type"] == "object" for t in tools)


def test_a_sub_agent_session_gets_the_sub_agent_tool_set(http: TestClient) -> None:
    # At depth 1, below the default maxSpawnDepth (5): the tools that run its own tree, nothing else.
    child = "agent:main:subagent:4f3c2a10-0000-4000-8000-000000000000"
    tools = http.get("/v1/tools", params={"sessionKey": child}).json()["tools"]
    assert [t["function"]["name"] for t in tools] == [
        "sessions_history",
        "sessions_list",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
    ]
    assert len(http.get("/v1/tools", params={"sessionKey": "main"}).json()["tools"]) == len(TOOLS)


def test_an_unknown_format_is_400_naming_it(http: TestClient) -> None:
    response = http.get("/v1/tools", params={"format": "gemini"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "format"
