"""MCP on the real stack: the ``mcp`` client library lists and calls the tools over streamable HTTP
(``/mcp`` on the API) and over stdio (``clawbus mcp`` launched as a subprocess)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from clawbus_client.models import SessionsHistoryResult
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.support.processes import wait_for
from tests.support.sessions import first_run
from tests.support.stack import TOKEN, Stack


@asynccontextmanager
async def over_http(stack: Stack, token: str = TOKEN, **headers: str) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}", **headers}, timeout=60)
    async with http, Client(streamable_http_client(f"{stack.url}/mcp", http_client=http)) as client:
        yield client


@asynccontextmanager
async def over_stdio(stack: Stack, *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "clawbus.api.cli", "mcp", "--url", stack.url, "--token", TOKEN, *args],
        env={**stack.env},
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def structured(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


async def list_and_call(client: Client) -> tuple[list[str], dict[str, Any]]:
    tools = await client.list_tools()
    listed = await client.call_tool("sessions_list", {"limit": 5})
    assert not listed.is_error
    return [tool.name for tool in tools.tools], structured(listed)


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_an_mcp_client_lists_the_tools_and_calls_sessions_list(stack: Stack, transport: str) -> None:
    async def scenario() -> tuple[list[str], dict[str, Any]]:
        opened = over_http(stack) if transport == "http" else over_stdio(stack)
        async with opened as client:
            return await list_and_call(client)

    names, listing = anyio.run(scenario)
    assert names == [
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "agents_list",
        "sessions_yield",
        "subagents",
        "session_status",
    ]
    assert "sessions" in listing
    assert listing["count"] == len(listing["sessions"])


def test_a_send_over_mcp_waits_for_the_reply(stack: Stack) -> None:
    with stack.client() as http:
        http.open_session("agent:research:mcp-send")  # a send opens no session

    async def scenario() -> dict[str, Any]:
        async with over_http(stack) as client:
            args = {"sessionKey": "agent:research:mcp-send", "message": "over mcp", "timeoutSeconds": 30}
            return structured(await client.call_tool("sessions_send", args))

    sent = anyio.run(scenario)
    assert sent["status"] == "ok"
    assert sent["reply"] == "echo: over mcp"


def test_bad_arguments_come_back_as_an_error_result_naming_the_field(stack: Stack) -> None:
    async def scenario() -> Any:
        async with over_stdio(stack) as client:
            return await client.call_tool("sessions_history", {"limit": 3})

    result = anyio.run(scenario)
    assert result.is_error
    assert structured(result)["error"] == "sessionKey required"


def test_the_session_acted_as_is_configurable_per_client(stack: Stack) -> None:
    async def scenario() -> dict[str, Any]:
        async with over_http(stack, **{"X-Clawbus-Session": "agent:main:subagent:mcp-child"}) as client:
            return structured(await client.call_tool("agents_list", {}))

    # agents_list is one a sub-agent never has, at any depth.
    assert anyio.run(scenario) == {
        "status": "forbidden",
        "error": "agents_list is not available in sub-agent sessions (tools.subagents.tools)",
    }


def test_mcp_over_http_needs_a_valid_token(stack: Stack) -> None:
    response = httpx2.post(
        f"{stack.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": "Bearer wrong"},
    )
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "unauthorized"


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_cancelled_tool_call_cancels_the_run_it_started(stack: Stack, transport: str) -> None:
    """The client gives up a send that waits (notifications/cancelled over stdio; over HTTP, closing the
    request's stream): the run the call started (one that runs until cancelled) ends aborted instead of
    running on."""
    target = f"agent:stalled:mcp-cancel-{transport}"
    with stack.client() as http:
        http.open_session(target)  # a send opens no session

        async def scenario() -> str:
            opened = over_http(stack) if transport == "http" else over_stdio(stack)
            async with opened as client, anyio.create_task_group() as group:
                args = {"sessionKey": target, "message": "never mind", "timeoutSeconds": 60}
                group.start_soon(client.call_tool, "sessions_send", args)
                while (run_id := await anyio.to_thread.run_sync(first_run, http, target)) is None:
                    await anyio.sleep(0.05)
                group.cancel_scope.cancel()
            return run_id

        run_id = anyio.run(scenario)
        run = wait_for(
            lambda: (r := http.get_run(run_id)).status.terminal and r, 10, what="the run to be cancelled"
        )
        assert (run.status, run.error) == ("aborted", "run aborted")


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_a_tool_call_retried_with_its_key_makes_one_run(stack: Stack, transport: str) -> None:
    """An MCP client that sends a call again (its answer lost) with the key in ``_meta`` gets the first
    call's answer, and no second run."""
    target = f"agent:research:mcp-retry-{transport}"
    with stack.client() as http:
        http.open_session(target)
    args = {"sessionKey": target, "message": "once", "timeoutSeconds": 0}
    meta = {"io.clawbus/idempotencyKey": f"mcp-retry-{transport}"}

    async def scenario() -> list[dict[str, Any]]:
        opened = over_http(stack) if transport == "http" else over_stdio(stack)
        async with opened as client:
            return [structured(await client.call_tool("sessions_send", args, meta=meta)) for _ in range(3)]

    answers = anyio.run(scenario)
    assert len({answer["runId"] for answer in answers}) == 1
    with stack.client() as http:
        run = http.wait_run(answers[0]["runId"], timeout=30)
        assert run is not None
        assert run.status == "ok"
        history = http.sessions_history(target, caller=target)
        assert isinstance(history, SessionsHistoryResult)
        assert [m["content"] for m in history.messages].count("once") == 1, history.messages
