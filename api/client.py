"""A thin Python client for the clawbus HTTP API: httpx and the pydantic models, nothing else.

from api.client import Client
with Client() as bus:                      # CLAWBUS_URL / CLAWBUS_TOKEN, or what `clawbus up` wrote
    result = bus.sessions_send("main", "hello", timeout_seconds=10)
    print(result.reply)
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import EllipsisType, TracebackType
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import connect_sse

from shared.backoff import delay
from shared.fleet_wire import AgentBudget, BudgetsView, FleetView
from shared.home import clawbus_home
from shared.models import CommandReply, Flow, QueueMode, Run, SessionEntry, ToolFailure
from shared.tools.history_schema import SessionsHistoryResult
from shared.tools.list_schema import SessionsListResult
from shared.tools.send_schema import SendResult
from shared.tools.subagents_schema import (
    SessionStatusCard,
    SubagentInfo,
    SubagentsKilled,
    SubagentsList,
    SubagentSteered,
)

DEFAULT_URL = "http://127.0.0.1:8787"
# Beyond the server-side wait, allow this much for the request itself.
_WAIT_MARGIN_S = 15.0
# A wait the server cut short (its cap) is asked again while at least this much of the caller's is left.
_WAIT_AGAIN_MIN_S = 0.5


class ClawbusError(Exception):
    """The API refused a request (4xx/5xx); ``type``, ``field`` and ``status`` say why."""

    def __init__(self, status: int, type_: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.field = status, type_, message, field
        # Seconds the server asked to wait before sending again (its Retry-After), when it said.
        self.retry_after: float | None = None


def _state_file(name: str) -> str | None:
    path = Path(clawbus_home()) / name
    return path.read_text().strip() if path.is_file() else None


def default_url() -> str:
    return os.environ.get("CLAWBUS_URL") or _state_file("api-url") or DEFAULT_URL


def default_token() -> str | None:
    return os.environ.get("CLAWBUS_TOKEN") or _state_file("token")


# The tools that create or change work: their calls carry an Idempotency-Key, and are sent again with it
# when the answer is lost (a dropped connection, a 503): the repeat makes nothing new.
WORK_TOOLS = frozenset({"sessions_send", "sessions_spawn", "sessions_yield", "subagents"})
# Sends of one call with its key: the first and the retries (about 7 s in all: an API restarting).
IDEMPOTENT_ATTEMPTS = 8

# A stream is silent at most 15 s (the server's keep-alive); longer means the connection is gone.
_STREAM_READ_S = 45.0
_STREAM_RECONNECTS = 5


class Client:
    def __init__(
        self, url: str | None = None, token: str | None = None, transport: httpx.BaseTransport | None = None
    ) -> None:
        token = token or default_token()
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=url or default_url(),
            headers=headers,
            transport=transport,
            timeout=httpx.Timeout(30.0, connect=5.0),
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- tools --

    def invoke(
        self,
        tool: str,
        args: dict[str, Any],
        *,
        caller: str = "main",
        wait_seconds: float = 0,
        wait: bool = True,
    ) -> dict[str, Any]:
        """``wait=False``: a call that would wait for a run answers ``accepted`` with its runId at once."""
        body = {"tool": tool, "args": args, "sessionKey": caller, **({} if wait else {"wait": False})}
        if tool in WORK_TOOLS:
            data = self._idempotent("POST", "/tools/invoke", json=body, wait_seconds=wait_seconds)
        else:
            data = self._request("POST", "/tools/invoke", json=body, wait_seconds=wait_seconds)
        details: dict[str, Any] = data["result"]["details"]
        return details

    def sessions_list(
        self,
        *,
        kinds: list[str] | None = None,
        limit: int | None = None,
        active_minutes: int | None = None,
        message_limit: int | None = None,
        caller: str = "main",
    ) -> SessionsListResult:
        args = _args(kinds=kinds, limit=limit, activeMinutes=active_minutes, messageLimit=message_limit)
        return SessionsListResult.model_validate(self.invoke("sessions_list", args, caller=caller))

    def sessions_history(
        self, session_key: str, *, limit: int | None = None, include_tools: bool = False, caller: str = "main"
    ) -> SessionsHistoryResult | ToolFailure:
        args = _args(sessionKey=session_key, limit=limit, includeTools=include_tools or None)
        result = self.invoke("sessions_history", args, caller=caller)
        return (
            ToolFailure.model_validate(result)
            if "error" in result
            else SessionsHistoryResult.model_validate(result)
        )

    def sessions_send(
        self,
        session_key: str | None,
        message: str,
        *,
        timeout_seconds: int = 30,
        label: str | None = None,
        agent_id: str | None = None,
        caller: str = "main",
        wait: bool = True,
        queue_mode: QueueMode | None = None,
    ) -> SendResult | ToolFailure:
        """``wait=False``: answered ``accepted`` at once, ``timeout_seconds`` still bounding the exchange's
        steps; wait for the reply with ``wait_run`` (or follow it with ``stream_run``). ``queue_mode``:
        followup, reject or interrupt if the target is busy (docs/contract.md §11)."""
        args = _args(
            sessionKey=session_key,
            label=label,
            agentId=agent_id,
            message=message,
            timeoutSeconds=timeout_seconds,
            queueMode=queue_mode,
        )
        waited = timeout_seconds if wait else 0
        return _send_result(self.invoke("sessions_send", args, caller=caller, wait_seconds=waited, wait=wait))

    # -- sessions and runs --

    def post_message(
        self,
        session_key: str,
        message: str,
        *,
        timeout_seconds: float = 30,
        queue_mode: QueueMode | None = None,
        **route: str,
    ) -> SendResult | ToolFailure | CommandReply:
        """``route``: channel, chatType, to, accountId, senderId. ``queue_mode``: what the message does if
        the session is busy (docs/contract.md §11); the session's or the configuration's mode if not given."""
        mode = {"queueMode": queue_mode} if queue_mode else {}
        body = {"message": message, "timeoutSeconds": timeout_seconds, **mode, **route}
        return _inbound_result(
            self._idempotent(
                "POST", f"/v1/sessions/{_path(session_key)}/messages", json=body, wait_seconds=timeout_seconds
            )
        )

    def get_session(self, session_key: str) -> SessionEntry:
        return SessionEntry.model_validate(self._request("GET", f"/v1/sessions/{_path(session_key)}"))

    def open_session(self, session_key: str) -> SessionEntry:
        """The session, opened if it does not exist yet (a send opens none)."""
        return SessionEntry.model_validate(self._request("PUT", f"/v1/sessions/{_path(session_key)}"))

    def patch_session(self, session_key: str, **changes: Any) -> SessionEntry:
        return SessionEntry.model_validate(
            self._request("PATCH", f"/v1/sessions/{_path(session_key)}", json=changes)
        )

    # -- a session's sub-agents (docs/contract.md §10), as that session sees them --

    def subagents(self, session_key: str, recursive: bool = False) -> SubagentsList:
        """The sub-agents ``session_key`` spawned (``recursive``: theirs too, parents first)."""
        path = f"/v1/sessions/{_path(session_key)}/subagents"
        return SubagentsList.model_validate(self._request("GET", path, params={"recursive": recursive}))

    def subagent_info(self, session_key: str, target: str) -> SubagentInfo:
        """One sub-agent (a session key at any depth, or a direct child's label): its row, its latest run."""
        path = f"/v1/sessions/{_path(session_key)}/subagents/{_path(target)}"
        return SubagentInfo.model_validate(self._request("GET", path))

    def kill_subagent(self, session_key: str, target: str) -> SubagentsKilled:
        """Stop ``target`` (or ``"all"`` the session's children) and everything it spawned; ``killed``
        names the sessions stopped, the targets first (``ClawbusError`` 404 if no sub-agent matches)."""
        path = f"/v1/sessions/{_path(session_key)}/subagents/{_path(target)}/kill"
        return SubagentsKilled.model_validate(self._request("POST", path))

    def steer_subagent(self, session_key: str, target: str, message: str) -> SubagentSteered:
        """``message`` reaches a running ``target`` at its next model step, else starts a run of its own
        (``delivered`` says which)."""
        path = f"/v1/sessions/{_path(session_key)}/subagents/{_path(target)}/steer"
        return SubagentSteered.model_validate(self._request("POST", path, json={"message": message}))

    def session_status(self, session_key: str) -> SessionStatusCard:
        """The session's status card (``state``: ``waiting for N children``, ``running``, ``idle ...``)."""
        return SessionStatusCard.model_validate(
            self._request("GET", f"/v1/sessions/{_path(session_key)}/status")
        )

    def get_run(self, run_id: str) -> Run:
        return Run.model_validate(self._request("GET", f"/v1/runs/{_path(run_id)}"))

    def wait_run(self, run_id: str, timeout: float = 30) -> Run | None:
        """The run once it ended; None if it was still going after ``timeout`` s. A server holds a wait at
        most ``gateway.maxWaitSeconds``: past that, this waits again until ``timeout`` is spent."""
        deadline = time.monotonic() + timeout
        while True:
            left = max(deadline - time.monotonic(), 0.0)
            data = self._request(
                "GET", f"/v1/runs/{_path(run_id)}/wait", params={"timeout": left}, wait_seconds=left
            )
            if data.get("status") != "timeout" or "sessionKey" in data:
                return Run.model_validate(data)
            if deadline - time.monotonic() < _WAIT_AGAIN_MIN_S:
                return None

    def run_events(self, run_id: str, after: str | None = None) -> list[dict[str, Any]]:
        """The run's events, oldest first (``text`` events carry the reply as it streamed in)."""
        params = {"after": after} if after else {}
        data = self._request("GET", f"/v1/runs/{_path(run_id)}/events", params=params)
        events: list[dict[str, Any]] = data["events"]
        return events

    def stream_run(self, run_id: str, after: str | None = None) -> Iterator[dict[str, Any]]:
        """The run's events as they happen (``{id, type, ...}``), until its ``ended`` event. A dropped
        connection is resumed by itself from the last event seen (``Last-Event-ID``): no gap, no repeat."""
        last = after
        for attempt in range(_STREAM_RECONNECTS + 1):
            headers = {"Last-Event-ID": last} if last else {}
            timeout = httpx.Timeout(30.0, read=_STREAM_READ_S)
            path = f"/v1/runs/{_path(run_id)}/stream"
            try:
                with connect_sse(self._http, "GET", path, headers=headers, timeout=timeout) as source:
                    if source.response.status_code >= 400:
                        source.response.read()
                        self._raise_for(source.response)
                    for event in source.iter_sse():
                        if not event.data:
                            continue  # a keep-alive some servers end with a blank line
                        last = event.id or last
                        yield {"id": event.id, "type": event.event, **event.json()}
                        if event.event == "ended":
                            return
                    return  # closed without an end: the run is gone
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout, httpx.ConnectError):
                if attempt == _STREAM_RECONNECTS:
                    raise
                time.sleep(delay(attempt + 1, base=0.2, cap=5.0))

    def cancel_run(self, run_id: str) -> Run:
        """End the run ``aborted`` wherever it is; the run as it is then (``ClawbusError`` 409 if it had
        already ended otherwise)."""
        return Run.model_validate(self._request("POST", f"/v1/runs/{_path(run_id)}/cancel", wait_seconds=5))

    def get_flow(self, flow_id: str) -> Flow:
        return Flow.model_validate(self._request("GET", f"/v1/flows/{_path(flow_id)}"))

    def cancel_flow(self, flow_id: str) -> Flow:
        """End the flow (``stopReason: canceled``), aborting the step it is on."""
        return Flow.model_validate(self._request("POST", f"/v1/flows/{_path(flow_id)}/cancel"))

    def channel_messages(self, channel: str, to: str, after: str | None = None) -> list[dict[str, Any]]:
        """What clawbus delivered to a local channel (``webchat`` recipient, or a session's ``log``)."""
        params = {"after": after} if after else {}
        data = self._request("GET", f"/v1/channels/{_path(channel)}/{_path(to)}/messages", params=params)
        messages: list[dict[str, Any]] = data["messages"]
        return messages

    def tools(self, fmt: str = "openai", session_key: str | None = None) -> list[dict[str, Any]]:
        """The tool schemas (``openai`` or ``anthropic`` format), those of ``session_key`` if given."""
        params = {"format": fmt, **({"sessionKey": session_key} if session_key else {})}
        tools: list[dict[str, Any]] = self._request("GET", "/v1/tools", params=params)["tools"]
        return tools

    def status(self) -> FleetView:
        """The fleet at a glance, its models' traffic too (an owner token)."""
        return FleetView.model_validate(self._request("GET", "/v1/status"))

    def budgets(self) -> BudgetsView:
        """Every agent's spend today and every active sub-agent tree against budgets (an owner token)."""
        return BudgetsView.model_validate(self._request("GET", "/v1/budgets"))

    def set_budget(
        self,
        agent_id: str,
        *,
        daily_usd: float | EllipsisType | None = ...,
        daily_tokens: int | EllipsisType | None = ...,
    ) -> AgentBudget:
        """Replace ``agent_id``'s runtime budget (an owner token): a number sets a value, None lifts the
        limit, a value left out (``...``) is the configuration's."""
        body = {
            name: value
            for name, value in (("dailyUsd", daily_usd), ("dailyTokens", daily_tokens))
            if value is not ...
        }
        data = self._request("PUT", f"/v1/agents/{_path(agent_id)}/budget", json=body)
        return AgentBudget.model_validate(data)

    def ready(self) -> dict[str, Any]:
        return self._request("GET", "/readyz")

    def _idempotent(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """A request that creates work, with a fresh Idempotency-Key, sent again with the same key while its
        answer is lost (a dropped connection, a timeout, a 503): however many times it is sent, one run."""
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        for attempt in range(1, IDEMPOTENT_ATTEMPTS + 1):
            last = attempt == IDEMPOTENT_ATTEMPTS
            try:
                return self._request(method, path, headers=headers, **kwargs)
            except httpx.TransportError:
                if last:
                    raise
                pause = delay(attempt, 0.1, 2.0)
            except ClawbusError as exc:
                if exc.status != 503 or last:
                    raise
                pause = max(exc.retry_after or 0.0, delay(attempt, 0.1, 2.0))
            time.sleep(pause)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _request(self, method: str, path: str, *, wait_seconds: float = 0, **kwargs: Any) -> dict[str, Any]:
        timeout = httpx.Timeout(30.0 + wait_seconds + _WAIT_MARGIN_S, connect=5.0)
        response = self._http.request(method, path, timeout=timeout, **kwargs)
        try:
            data: dict[str, Any] = response.json()
        except ValueError:
            raise ClawbusError(response.status_code, "bad_response", response.text[:200]) from None
        if response.status_code >= 400:
            self._raise_for(response)
        return data

    @staticmethod
    def _raise_for(response: httpx.Response) -> None:
        try:
            error = response.json().get("error") or {}
        except ValueError:
            error = {}
        failure = ClawbusError(
            response.status_code,
            error.get("type", "http_error"),
            error.get("message", response.text[:200]),
            error.get("field"),
        )
        with contextlib.suppress(ValueError):
            failure.retry_after = float(response.headers.get("retry-after", ""))
        raise failure


def _args(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _path(segment: str) -> str:
    return quote(segment, safe=":@-._~")


def _send_result(data: dict[str, Any]) -> SendResult | ToolFailure:
    """A refusal (``forbidden``, or an ``error`` before any run started) is a ToolFailure, whether or not it
    names the session; a run that failed after it started (``sentBeforeError``) is a SendResult."""
    refused = data.get("status") == "forbidden" or (
        data.get("status") == "error" and not data.get("sentBeforeError")
    )
    return ToolFailure.model_validate(data) if refused else SendResult.model_validate(data)


def _inbound_result(data: dict[str, Any]) -> SendResult | ToolFailure | CommandReply:
    return CommandReply.model_validate(data) if "command" in data else _send_result(data)
