"""Every request of the HTTP API, once: what to send and how to read the answer. ``Client`` and
``AsyncClient`` bind these as their methods and send them, each with its own httpx client."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import EllipsisType
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from clawbus_client.errors import APIError, refusal
from clawbus_client.models import (
    AgentBudget,
    BudgetsView,
    CommandReply,
    FleetView,
    Flow,
    NotifyResult,
    Run,
    SendResult,
    SessionEntry,
    SessionsHistoryResult,
    SessionsListResult,
    SessionStatusCard,
    SpawnResult,
    SubagentInfo,
    SubagentsKilled,
    SubagentsList,
    SubagentSteered,
    ToolFailure,
)

T = TypeVar("T")

HEADER = "Idempotency-Key"
# The tools that create or change work: their calls carry an Idempotency-Key, and are sent again with it
# when the answer is lost (a dropped connection, a 503): the repeat makes nothing new.
WORK_TOOLS = frozenset({"sessions_send", "sessions_spawn", "sessions_yield", "subagents"})
# Sends of one call with its key: the first and the retries (about 7 s in all: an API restarting).
IDEMPOTENT_ATTEMPTS = 8
# Beyond the server-side wait, allow this much for the request itself.
WAIT_MARGIN_S = 15.0
# A wait the server cut short (its cap) is asked again while at least this much of the caller's is left.
WAIT_AGAIN_MIN_S = 0.5
# A stream is silent at most 15 s (the server's keep-alive); longer means the connection is gone.
STREAM_TIMEOUT = httpx.Timeout(30.0, read=45.0)
STREAM_RECONNECTS = 5
# What a dropped stream raises: it is resumed from the last event seen.
STREAM_BROKEN = (httpx.RemoteProtocolError, httpx.ReadError, httpx.ReadTimeout, httpx.ConnectError)


def _as_is(data: Any) -> Any:
    return data


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """One request: ``read`` turns its JSON answer into what the method returns. ``creates_work``: sent
    with an Idempotency-Key (``key``, else a fresh one) and again with it while its answer is lost."""

    method: str
    path: str
    read: Callable[[Any], T] = field(default=_as_is)
    params: dict[str, Any] | None = None
    json: Any = None
    wait_seconds: float = 0
    creates_work: bool = False
    key: str | None = None

    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(30.0 + self.wait_seconds + WAIT_MARGIN_S, connect=5.0)


def decoded(response: httpx.Response) -> Any:
    """The answer's JSON; a ``APIError`` for a refusal or an answer that is no JSON."""
    if response.status_code >= 400:
        raise refusal(response)
    try:
        return response.json()
    except ValueError:
        raise APIError(response.status_code, "bad_response", response.text[:200]) from None


def retry_pause(attempt: int, failure: Exception) -> float | None:
    """How long to pause before sending a call that creates work again after ``failure`` (its answer
    lost: a transport error, or a 503), or None when it is not to be sent again."""
    if attempt >= IDEMPOTENT_ATTEMPTS:
        return None
    backoff = random.uniform(0.5, 1.0) * min(2.0, 0.1 * 2.0 ** (attempt - 1))
    if isinstance(failure, httpx.TransportError):
        return backoff
    if isinstance(failure, APIError) and failure.status == 503:
        return max(failure.retry_after or 0.0, backoff)
    return None


def stream_pause(attempt: int) -> float:
    return min(5.0, 0.2 * 2.0**attempt)


def stream_event(event_id: str, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"id": event_id, "type": event_type, **data}


def wait_answer(data: dict[str, Any]) -> Run | None:
    """A wait's answer: the run once it ended, None while the server's wait ran out first."""
    if data.get("status") != "timeout" or "sessionKey" in data:
        return Run.model_validate(data)
    return None


# --- tools ---------------------------------------------------------------------------------------------


def invoke(
    tool: str,
    args: dict[str, Any],
    *,
    caller: str = "main",
    wait_seconds: float = 0,
    wait: bool = True,
    idempotency_key: str | None = None,
) -> Call[dict[str, Any]]:
    """Any tool as the session ``caller``: its result's ``details``. ``wait=False``: a call that would wait
    for a run answers ``accepted`` with its runId at once. The tools that create work are sent with an
    Idempotency-Key (``idempotency_key``, else a fresh one) and again with it while the answer is lost."""
    body = {"tool": tool, "args": args, "sessionKey": caller, **({} if wait else {"wait": False})}
    return Call(
        "POST",
        "/tools/invoke",
        _details,
        json=body,
        wait_seconds=wait_seconds,
        creates_work=tool in WORK_TOOLS or idempotency_key is not None,
        key=idempotency_key,
    )


def sessions_list(
    *,
    kinds: list[str] | None = None,
    limit: int | None = None,
    active_minutes: int | None = None,
    message_limit: int | None = None,
    caller: str = "main",
) -> Call[SessionsListResult]:
    """The sessions ``caller`` may see, newest first."""
    args = _args(kinds=kinds, limit=limit, activeMinutes=active_minutes, messageLimit=message_limit)
    return _then(invoke("sessions_list", args, caller=caller), SessionsListResult.model_validate)


def sessions_history(
    session_key: str, *, limit: int | None = None, include_tools: bool = False, caller: str = "main"
) -> Call[SessionsHistoryResult | ToolFailure]:
    """A session's transcript as ``caller`` may read it."""
    args = _args(sessionKey=session_key, limit=limit, includeTools=include_tools or None)
    return _then(invoke("sessions_history", args, caller=caller), _history_result)


def sessions_send(
    session_key: str | None,
    message: str,
    *,
    timeout_seconds: int = 30,
    label: str | None = None,
    agent_id: str | None = None,
    mode: str | None = None,
    watch: bool = False,
    caller: str = "main",
    wait: bool = True,
    queue_mode: str | None = None,
    idempotency_key: str | None = None,
) -> Call[SendResult | NotifyResult | ToolFailure]:
    """Message a session (by key, or by ``label``); with ``timeout_seconds`` > 0, wait that long for its
    reply. ``wait=False``: answered ``accepted`` at once, ``timeout_seconds`` still bounding the exchange's
    steps; wait for the reply with ``wait_run`` (or follow it with ``stream_run``). ``mode``: ``followup``
    (the default: a turn of its own), ``steer`` (into the target's running run, answered ``accepted``
    with ``target_disposition="steered"`` at once, whatever the wait) or ``notify`` (context for the
    target's next turn, starting none: a ``NotifyResult``); docs/contract.md §4. ``watch``: the caller is
    told in its next turn when someone else changes the target (the result's ``watched`` says whether it
    now watches it). ``queue_mode``: followup, reject or interrupt if the target is busy (§11)."""
    args = _args(
        sessionKey=session_key,
        label=label,
        agentId=agent_id,
        message=message,
        timeoutSeconds=timeout_seconds,
        mode=mode,
        watch=watch or None,
        queueMode=queue_mode,
    )
    # Only a turn of its own is waited for: a steer and a notification are answered at once.
    waited = timeout_seconds if wait and mode in (None, "followup") else 0
    sent = invoke(
        "sessions_send", args, caller=caller, wait_seconds=waited, wait=wait, idempotency_key=idempotency_key
    )
    return _then(sent, send_result)


def sessions_spawn(
    task: str,
    *,
    label: str | None = None,
    agent_id: str | None = None,
    model: str | None = None,
    run_timeout_seconds: int | None = None,
    mode: str | None = None,
    cleanup: str | None = None,
    context: str | None = None,
    caller: str = "main",
    idempotency_key: str | None = None,
) -> Call[SpawnResult | ToolFailure]:
    """Start a sub-agent on ``task``; its report comes back to ``caller`` when it ends."""
    args = _args(
        task=task,
        label=label,
        agentId=agent_id,
        model=model,
        runTimeoutSeconds=run_timeout_seconds,
        mode=mode,
        cleanup=cleanup,
        context=context,
    )
    spawned = invoke("sessions_spawn", args, caller=caller, idempotency_key=idempotency_key)
    return _then(spawned, _spawn_result)


def tools(fmt: str = "openai", session_key: str | None = None) -> Call[list[dict[str, Any]]]:
    """The tool schemas (``openai`` or ``anthropic`` format), those of ``session_key`` if given."""
    params = {"format": fmt, **({"sessionKey": session_key} if session_key else {})}
    return Call("GET", "/v1/tools", lambda data: list(data["tools"]), params=params)


# --- sessions ------------------------------------------------------------------------------------------


def post_message(
    session_key: str,
    message: str,
    *,
    timeout_seconds: float = 30,
    queue_mode: str | None = None,
    message_id: str | None = None,
    idempotency_key: str | None = None,
    **route: str,
) -> Call[SendResult | ToolFailure | CommandReply]:
    """An inbound chat message for the session. ``route``: channel, chatType, to, accountId, senderId.
    ``message_id``: the platform's own id (a redelivery of it is the same message). ``queue_mode``: what it
    does if the session is busy (docs/contract.md §11)."""
    extra = _args(queueMode=queue_mode, messageId=message_id)
    body = {"message": message, "timeoutSeconds": timeout_seconds, **extra, **route}
    return Call(
        "POST",
        f"/v1/sessions/{segment(session_key)}/messages",
        _inbound_result,
        json=body,
        wait_seconds=timeout_seconds,
        creates_work=True,
        key=idempotency_key,
    )


def list_all_sessions(**params: Any) -> Call[SessionsListResult]:
    """Every session of every agent (an owner token); ``params`` as ``sessions_list``'s, camelCase."""
    return Call("GET", "/v1/sessions", SessionsListResult.model_validate, params=params)


def get_session(session_key: str) -> Call[SessionEntry]:
    return Call("GET", f"/v1/sessions/{segment(session_key)}", SessionEntry.model_validate)


def open_session(session_key: str) -> Call[SessionEntry]:
    """The session, opened if it does not exist yet (a send opens none)."""
    return Call("PUT", f"/v1/sessions/{segment(session_key)}", SessionEntry.model_validate)


def patch_session(session_key: str, **changes: Any) -> Call[SessionEntry]:
    """Change the session's settings (camelCase names: ``label``, ``model``, ``queueMode``, ...)."""
    path = f"/v1/sessions/{segment(session_key)}"
    return Call("PATCH", path, SessionEntry.model_validate, json=changes, creates_work=True)


def session_status(session_key: str) -> Call[SessionStatusCard]:
    """The session's status card (``state``: ``waiting for N children``, ``running``, ``idle ...``)."""
    return Call("GET", f"/v1/sessions/{segment(session_key)}/status", SessionStatusCard.model_validate)


# --- a session's sub-agents (docs/contract.md §10), as that session sees them --------------------------


def subagents(session_key: str, recursive: bool = False) -> Call[SubagentsList]:
    """The sub-agents ``session_key`` spawned (``recursive``: theirs too, parents first)."""
    path = f"/v1/sessions/{segment(session_key)}/subagents"
    return Call("GET", path, SubagentsList.model_validate, params={"recursive": recursive})


def subagent_info(session_key: str, target: str) -> Call[SubagentInfo]:
    """One sub-agent (a session key at any depth, or a direct child's label): its row, its latest run."""
    path = f"/v1/sessions/{segment(session_key)}/subagents/{segment(target)}"
    return Call("GET", path, SubagentInfo.model_validate)


def kill_subagent(session_key: str, target: str) -> Call[SubagentsKilled]:
    """Stop ``target`` (or ``"all"`` the session's children) and everything it spawned; ``killed`` names
    the sessions stopped, the targets first (``APIError`` 404 if no sub-agent matches)."""
    path = f"/v1/sessions/{segment(session_key)}/subagents/{segment(target)}/kill"
    return Call("POST", path, SubagentsKilled.model_validate, creates_work=True)


def steer_subagent(session_key: str, target: str, message: str) -> Call[SubagentSteered]:
    """``message`` reaches a running ``target`` at its next model step, else starts a run of its own
    (``delivered`` says which)."""
    path = f"/v1/sessions/{segment(session_key)}/subagents/{segment(target)}/steer"
    return Call("POST", path, SubagentSteered.model_validate, json={"message": message}, creates_work=True)


# --- runs and flows ------------------------------------------------------------------------------------


def get_run(run_id: str) -> Call[Run]:
    return Call("GET", f"/v1/runs/{segment(run_id)}", Run.model_validate)


def wait_once(run_id: str, timeout: float) -> Call[Run | None]:
    """One server-side wait for the run's end: the run, or None if the server's wait ran out first."""
    path = f"/v1/runs/{segment(run_id)}/wait"
    return Call("GET", path, wait_answer, params={"timeout": timeout}, wait_seconds=timeout)


def run_events(run_id: str, after: str | None = None) -> Call[list[dict[str, Any]]]:
    """The run's events, oldest first (``text`` events carry the reply as it streamed in)."""
    params = {"after": after} if after else {}
    return Call("GET", f"/v1/runs/{segment(run_id)}/events", lambda data: list(data["events"]), params=params)


def cancel_run(run_id: str) -> Call[Run]:
    """End the run ``aborted`` wherever it is; the run as it is then (``APIError`` 409 if it had
    already ended otherwise)."""
    path = f"/v1/runs/{segment(run_id)}/cancel"
    return Call("POST", path, Run.model_validate, wait_seconds=5, creates_work=True)


def get_flow(flow_id: str) -> Call[Flow]:
    return Call("GET", f"/v1/flows/{segment(flow_id)}", Flow.model_validate)


def cancel_flow(flow_id: str) -> Call[Flow]:
    """End the flow (``stopReason: canceled``), aborting the step it is on."""
    return Call("POST", f"/v1/flows/{segment(flow_id)}/cancel", Flow.model_validate, creates_work=True)


def channel_messages(channel: str, to: str, after: str | None = None) -> Call[list[dict[str, Any]]]:
    """What clawbus delivered to a local channel (``webchat`` recipient, or a session's ``log``)."""
    params = {"after": after} if after else {}
    path = f"/v1/channels/{segment(channel)}/{segment(to)}/messages"
    return Call("GET", path, lambda data: list(data["messages"]), params=params)


# --- the fleet -----------------------------------------------------------------------------------------


def me() -> Call[dict[str, Any]]:
    """Who the token is: its principal, whether it is an owner, the agents it may act for."""
    return Call("GET", "/v1/me")


def status() -> Call[FleetView]:
    """The fleet at a glance, its models' traffic too (an owner token)."""
    return Call("GET", "/v1/status", FleetView.model_validate)


def in_flight(**params: Any) -> Call[dict[str, Any]]:
    """The runs in flight, lane by lane (an owner token)."""
    return Call("GET", "/v1/inflight", params=params)


def budgets() -> Call[BudgetsView]:
    """Every agent's spend today and every active sub-agent tree against budgets (an owner token)."""
    return Call("GET", "/v1/budgets", BudgetsView.model_validate)


def set_budget(
    agent_id: str,
    *,
    daily_usd: float | EllipsisType | None = ...,
    daily_tokens: int | EllipsisType | None = ...,
) -> Call[AgentBudget]:
    """Replace ``agent_id``'s runtime budget (an owner token): a number sets a value, None lifts the
    limit, a value left out (``...``) is the configuration's."""
    body = {
        name: value
        for name, value in (("dailyUsd", daily_usd), ("dailyTokens", daily_tokens))
        if value is not ...
    }
    return Call("PUT", f"/v1/agents/{segment(agent_id)}/budget", AgentBudget.model_validate, json=body)


def ready() -> Call[dict[str, Any]]:
    return Call("GET", "/readyz")


# --- reading answers -----------------------------------------------------------------------------------


def _then(call: Call[Any], read: Callable[[Any], T]) -> Call[T]:
    """``call`` whose answer is read on by ``read``."""
    first = call.read
    return replace(call, read=lambda data: read(first(data)))


def _details(data: Any) -> dict[str, Any]:
    details: dict[str, Any] = data["result"]["details"]
    return details


def send_result(data: dict[str, Any]) -> SendResult | NotifyResult | ToolFailure:
    """``sessions_send``'s answer: a notification queued (``mode="notify"``) is a NotifyResult; otherwise
    as ``run_result``."""
    return NotifyResult.model_validate(data) if data.get("status") == "queued" else run_result(data)


def run_result(data: dict[str, Any]) -> SendResult | ToolFailure:
    """A refusal (``forbidden``, or an ``error`` before any run started) is a ToolFailure, whether or not it
    names the session; a run that failed after it started (``sentBeforeError``) is a SendResult."""
    refused = data.get("status") == "forbidden" or (
        data.get("status") == "error" and not data.get("sentBeforeError")
    )
    return ToolFailure.model_validate(data) if refused else SendResult.model_validate(data)


def _spawn_result(data: dict[str, Any]) -> SpawnResult | ToolFailure:
    return SpawnResult.model_validate(data) if data.get("status") == "accepted" else _failure(data)


def _history_result(data: dict[str, Any]) -> SessionsHistoryResult | ToolFailure:
    return _failure(data) if "error" in data else SessionsHistoryResult.model_validate(data)


def _inbound_result(data: dict[str, Any]) -> SendResult | ToolFailure | CommandReply:
    return CommandReply.model_validate(data) if "command" in data else run_result(data)


def _failure(data: dict[str, Any]) -> ToolFailure:
    return ToolFailure.model_validate(data)


def _args(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def segment(value: str) -> str:
    """``value`` as one path segment."""
    return quote(value, safe=":@-._~")
