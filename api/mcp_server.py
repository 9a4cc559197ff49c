"""The session tools over MCP, for any MCP client (Claude Desktop, IDEs, agent frameworks).

Two transports, one server shape:

- ``/mcp`` on the API (streamable HTTP, stateless, so any API replica answers any request): tools run
  in-process exactly as ``POST /tools/invoke`` runs them, for the bearer token's principal.
- ``clawbus mcp`` (stdio): a proxy a client launches as a subprocess; it calls the API over HTTP.

Either way the client acts as one session: ``gateway.mcp.sessionKey`` (default ``main``), or the session
named by the ``X-Clawbus-Session`` header (HTTP) or ``--session`` (stdio). A tool's refusal and bad
arguments come back as results with ``isError`` set, in the words the HTTP API would use.
"""

from __future__ import annotations

import contextlib
import json
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import anyio
import mcp_types as types
from clawbus_client import APIError, Client
from clawbus_client.models import SendResult
from fastapi.concurrency import run_in_threadpool
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from clawbus.api import idempotency
from clawbus.api.auth import Principal, principal_for
from clawbus.api.client_sends import waited_send
from clawbus.api.errors import ApiError, error_response
from clawbus.api.routes.tools import call_tool, schemas_for
from clawbus.api.services import Services
from clawbus.shared.domain.idempotency import HEADER
from clawbus.shared.wire.models import Wire, content_text

SESSION_HEADER = "x-clawbus-session"
# A tool call's idempotency key in its ``_meta`` (a prefixed name, as MCP asks of custom ``_meta`` keys); over
# HTTP the POST's Idempotency-Key header does as well. JSON-RPC ids are no key: a stateless server cannot
# tell one client's request 1 from another's.
META_KEY = "io.clawbus/idempotencyKey"
INSTRUCTIONS = (
    "clawbus session tools: list sessions, read a transcript, message another agent's session (optionally "
    "waiting for its reply), spawn a sub-agent whose result is announced back."
)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    result: dict[str, Any]
    is_error: bool


class ToolBackend(Protocol):
    async def schemas(self) -> list[dict[str, Any]]:
        """The tools in the Anthropic shape (``name``, ``description``, ``input_schema``)."""
        ...

    async def call(self, name: str, arguments: dict[str, Any], key: str | None) -> ToolOutcome:
        """``key``: the call's idempotency key, if its client gave one (a retried call makes nothing new)."""
        ...


def build_server(backend: ToolBackend) -> Server[Any]:
    async def list_tools(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [
            types.Tool(name=s["name"], description=s["description"], input_schema=s["input_schema"])
            for s in await backend.schemas()
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        outcome = await backend.call(params.name, dict(params.arguments or {}), _meta_key(params))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=content_text(outcome.result))],
            structured_content=outcome.result,
            is_error=outcome.is_error,
        )

    return Server(
        "clawbus",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _meta_key(params: types.CallToolRequestParams) -> str | None:
    """The call's idempotency key from its ``_meta`` (the same in both transports), if it has one."""
    key = (params.meta or {}).get(META_KEY)
    return key if isinstance(key, str) else None


def _failed(result: dict[str, Any]) -> bool:
    return result.get("status") in ("error", "forbidden")


# --- /mcp on the API --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Caller:
    services: Services
    principal: Principal
    session_key: str
    idempotency_key: str | None


# Set per HTTP request before the MCP machinery runs; the tool handlers it starts inherit it.
_caller: ContextVar[_Caller] = ContextVar("clawbus_mcp_caller")


class InProcessBackend:
    async def schemas(self) -> list[dict[str, Any]]:
        caller = _caller.get()
        return schemas_for(caller.services, caller.principal, caller.session_key, "anthropic")

    async def call(self, name: str, arguments: dict[str, Any], key: str | None) -> ToolOutcome:
        caller = _caller.get()
        key = key or caller.idempotency_key
        try:
            keyed = None if key is None else await run_in_threadpool(_claim, caller, key, name, arguments)
            if keyed is not None and keyed.answer is not None:
                data = json.loads(keyed.answer)
                return ToolOutcome(data, _failed(data))
            # A client that cancels the call (notifications/cancelled, or closing the request's stream)
            # cancels this handler: the run the call started is cancelled with it.
            result: Wire = await call_tool(
                caller.services,
                caller.principal,
                name,
                arguments,
                caller.session_key,
                abandon_cancels=True,
                id_seed=None if keyed is None else keyed.seed,
            )
        except ApiError as exc:
            return ToolOutcome({"status": "error", "error": exc.message}, True)
        data = result.wire()
        answer = json.dumps(data, ensure_ascii=False)
        await run_in_threadpool(idempotency.remember, caller.services, caller.principal, keyed, answer)
        return ToolOutcome(data, _failed(data))


def _claim(caller: _Caller, key: str, name: str, arguments: dict[str, Any]) -> idempotency.Keyed:
    """A tool call is the request ``POST /mcp`` with its tool, arguments and session."""
    body = {"name": name, "arguments": arguments, "session": caller.session_key}
    return idempotency.claim_key(caller.services, caller.principal, key, "POST", "/mcp", body)


class McpEndpoint:
    """The ASGI app behind ``/mcp``: bearer-token check, then the MCP session manager."""

    def __init__(self) -> None:
        # Not JSON-only: a call that outlives a few seconds answers as an event stream, which is how the
        # transport notices the client leaving, and cancels the call (and with it the run it started).
        self.manager = StreamableHTTPSessionManager(
            app=build_server(InProcessBackend()), json_response=False, stateless=True
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        services: Services = request.app.state.services
        scheme, _, presented = request.headers.get("authorization", "").partition(" ")
        principal = principal_for(services.config, presented) if scheme.lower() == "bearer" else None
        if principal is None:
            response = error_response(
                401, "unauthorized", "missing or invalid bearer token", headers={"WWW-Authenticate": "Bearer"}
            )
            await response(scope, receive, send)
            return
        session_key = request.headers.get(SESSION_HEADER) or services.config.gateway.mcp.session_key
        _caller.set(_Caller(services, principal, session_key, request.headers.get(HEADER)))
        await self.manager.handle_request(scope, receive, send)


# --- clawbus mcp (stdio) ----------------------------------------------------------------------------


class RemoteBackend:
    """Tool calls through the HTTP API (the client is synchronous: each call runs in a thread)."""

    def __init__(self, client: Client, session_key: str) -> None:
        self._client = client
        self._session_key = session_key

    async def schemas(self) -> list[dict[str, Any]]:
        return await run_in_threadpool(self._client.tools, "anthropic", self._session_key)

    async def call(self, name: str, arguments: dict[str, Any], key: str | None) -> ToolOutcome:
        """A send that waits is accepted first and then waited for here, so that the client cancelling
        the call (notifications/cancelled) knows which run to cancel."""
        try:
            result = await run_in_threadpool(
                partial(
                    self._client.invoke,
                    name,
                    arguments,
                    caller=self._session_key,
                    wait=False,
                    idempotency_key=key,
                )
            )
            if name == "sessions_send" and result.get("status") == "accepted":
                result = await self._wait(result, arguments.get("timeoutSeconds", 30))
        except APIError as exc:
            return ToolOutcome({"status": "error", "error": exc.message}, True)
        return ToolOutcome(result, _failed(result))

    async def _wait(self, accepted: dict[str, Any], timeout: Any) -> dict[str, Any]:
        sent = SendResult.model_validate(accepted)
        seconds = float(timeout) if isinstance(timeout, int | float) else 30.0
        # A steer is answered at once, as the release answers it: its run is taken into another's turn.
        if seconds == 0 or sent.target_disposition == "steered":
            return accepted
        try:
            run = await anyio.to_thread.run_sync(
                self._client.wait_run, sent.run_id, seconds, abandon_on_cancel=True
            )
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), contextlib.suppress(APIError):  # 409: it had ended
                await anyio.to_thread.run_sync(self._client.cancel_run, sent.run_id)
            raise
        return waited_send(sent, run).wire()


async def serve_stdio(client: Client, session_key: str) -> None:
    server = build_server(RemoteBackend(client, session_key))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(client: Client, session_key: str) -> None:
    anyio.run(serve_stdio, client, session_key)
