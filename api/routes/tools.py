"""``POST /tools/invoke``: OpenClaw's HTTP tool call, ``{tool, args, sessionKey?} -> {ok, result}``; and
``GET /v1/tools``: the tools as JSON schemas for any LLM application (OpenAI or Anthropic format)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from clawbus.api import idempotency
from clawbus.api.auth import Principal
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ApiError, ErrorResponse, bad_request, openclaw_json
from clawbus.api.params import SESSION_KEY_CONSTRAINTS
from clawbus.api.routes.resolve import acting_as
from clawbus.api.schemas import INVOKE_BODY, InvokeRequest, InvokeResponse
from clawbus.api.services import Services
from clawbus.api.waits import Watch
from clawbus.shared.adapters import tracing
from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import tool_input_error
from clawbus.shared.domain import logs, subagents
from clawbus.shared.flows import run_control
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.runner.tool_schemas import SchemaFormat, tool_schemas
from clawbus.shared.tools.registry import TOOLS, Tool
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Wire
from clawbus.shared.wire.send_schema import SessionsSendParams

router = APIRouter(tags=["tools"])


@router.post(
    "/tools/invoke",
    response_model=InvokeResponse,
    responses={code: {"model": ErrorResponse} for code in (400, 401, 403, 404, 413)},
    openapi_extra={
        "requestBody": {"required": True, "content": {"application/json": {"schema": INVOKE_BODY}}}
    },
)
async def invoke(request: Request, services: ServicesDep, principal: PrincipalDep) -> Response:
    data = await openclaw_json(request)
    body = InvokeRequest.model_validate(data if isinstance(data, dict) else {})
    name = body.tool
    if name is None:
        raise ApiError(400, "invalid_request", "tools.invoke requires name")
    args = dict(body.args or {})
    tool = TOOLS.get(name)
    if body.action is not None and tool is not None and "action" in tool.params.model_fields:
        args.setdefault("action", body.action)
    caller = _caller_key(services, body.session_key, body.agent_id)

    async def answer(keyed: idempotency.Keyed | None) -> dict[str, Any]:
        seed, first_use = (None, False) if keyed is None else (keyed.seed, keyed.first)
        result = await call_tool(
            services,
            principal,
            name,
            args,
            caller,
            body.run_id,
            wait=body.wait,
            id_seed=seed,
            first_use=first_use,
        )
        # The result is already its wire form: validating it again against the response model (which
        # only documents it) cost as much as the encoding.
        return {"ok": True, "result": result.tool_result()}

    return await idempotency.answered_once_keyed(services, principal, request, data, answer)


def _caller_key(services: Services, session_key: str | None, agent_id: str | None) -> str:
    """The calling session as the release resolves ``sessionKey`` with ``agentId``: the key under that
    agent, refused when the key names another one."""
    raw = session_key or "main"
    if agent_id is None:
        return raw
    agent = agent_id.lower()
    if agent not in services.config.agent_ids():
        raise ApiError(400, "invalid_request", f'Unknown agent id "{agent_id}"')
    if raw.lower().startswith("agent:"):
        named = raw.split(":")[1].lower()
        if named != agent:
            raise ApiError(
                400, "invalid_request", f'agent "{agent}" does not match session key agent "{named}"'
            )
        return raw
    rest = services.config.session.main_key if raw.lower() == "main" else raw
    return f"agent:{agent}:{rest}"


async def call_tool(
    services: Services,
    principal: Principal,
    name: str,
    args: dict[str, Any],
    session_key: str,
    run_id: str | None = None,
    wait: bool = True,
    abandon_cancels: bool = False,
    id_seed: str | None = None,
    first_use: bool = False,
) -> Wire:
    """One tool call on behalf of ``principal`` acting as ``session_key``, waits included (the HTTP call and
    MCP share it). Bad input raises ApiError (4xx, naming the field); refusals are results. ``id_seed``: the
    runs the call makes have ids derived from it (an idempotent request's repeat makes none); ``first_use``:
    no run derived from it exists yet (the key's first use)."""
    tool = TOOLS.get(name)
    if tool is None or services.config.gateway.tools.denied(name):
        raise ApiError(404, "not_found", f"Tool not available: {name}")
    ctx = _caller(services, principal, session_key, run_id)
    if id_seed is not None:
        ctx = dataclasses.replace(ctx, id_seed=id_seed)
    with (
        logs.bound(session_key=ctx.caller_key, run_id=run_id),
        tracing.tool_call(name, ctx.caller_key, None, args),
    ):
        return await _call(services, tool, ctx, args, wait, abandon_cancels, first_use)


async def _call(
    services: Services,
    tool: Tool,
    ctx: ToolContext,
    args: dict[str, Any],
    wait: bool,
    abandon_cancels: bool,
    first_use: bool = False,
) -> Wire:
    arrived = anyio.current_time()
    refused = tool.refusal(ctx)
    if refused is not None:
        return refused
    try:
        params = tool.parse(args, ctx)
    except ValidationError as exc:
        field, message = tool_input_error(exc.errors())
        raise ApiError(400, "tool_error", message, field) from None
    if not (wait and isinstance(params, SessionsSendParams) and params.wait_seconds > 0):
        result = await run_in_threadpool(tool.run, ctx, params)
        if isinstance(result, AwaitRun) and not wait:
            return result.accepted()
        return await settle(services, result, arrived, abandon_cancels)
    if ctx.id_seed is not None and not first_use:  # a repeat: its run may exist, and may have ended
        return await settle(
            services, await run_in_threadpool(tool.run, ctx, params), arrived, abandon_cancels
        )
    # A send that waits subscribes to its run's end before accepting it, so the wait need not read the run
    # after subscribing (api/waits.py): its run's id is known first, from a seed of its own if it has none.
    if ctx.id_seed is None:
        ctx = dataclasses.replace(ctx, id_seed=uuid.uuid4().hex)
    within = min(params.wait_seconds, services.config.gateway.max_wait_seconds)
    async with services.waiter.watch(ctx.new_run_id(), within) as watch:
        result = await run_in_threadpool(tool.run, ctx, params)
        return await settle(services, result, arrived, abandon_cancels, watch)


@router.get("/v1/tools", responses={code: {"model": ErrorResponse} for code in (400, 401, 403, 404)})
def list_tools(
    services: ServicesDep,
    principal: PrincipalDep,
    format: Annotated[SchemaFormat, Query(description="openai (function tools) or anthropic")] = "openai",
    session_key: Annotated[
        str | None,
        Query(alias="sessionKey", **SESSION_KEY_CONSTRAINTS, description="Only the tools this session has"),
    ] = None,
) -> dict[str, Any]:
    """Every tool's schema (a sub-agent session gets the sub-agent tool set). Integers are ``number`` and
    there is no top-level ``anyOf``/``oneOf``, which some model APIs reject."""
    return {"format": format, "tools": schemas_for(services, principal, session_key, format)}


def schemas_for(
    services: Services, principal: Principal, session_key: str | None, fmt: SchemaFormat
) -> list[dict[str, Any]]:
    """The tools ``session_key`` has (a sub-agent gets the sub-agent set); every tool without one."""
    names = list(TOOLS)
    if session_key is not None:
        # A session of an agent that does not exist has no tools to list: not found, as in a path.
        ctx = acting_as(services, principal, session_key, field="sessionKey", unknown_agent_status=404)
        if session_keys.is_subagent(ctx.caller_key):
            entry = services.store.sessions.get(ctx.caller_key)
            role = subagents.role_of(services.config, ctx.caller_key, entry)
            names = subagents.tool_set(services.config, TOOLS, role)
    return tool_schemas(fmt, names)


async def settle(
    services: Services,
    result: Wire | AwaitRun,
    arrived: float,
    abandon_cancels: bool = False,
    watch: Watch | None = None,
) -> Wire:
    """Finish a result that asked to wait for a run, on this process's pub/sub multiplexer. The wait's
    seconds count from ``arrived`` (the request's, loop time): accepting the run is part of the time the
    caller gave, so a loaded API answers at the deadline the caller set, not that plus the accept. With
    ``abandon_cancels``, a caller that gives up the wait (an MCP client's cancel) cancels the run too."""
    if not isinstance(result, AwaitRun):
        return result
    try:
        deadline = arrived + result.wait_seconds
        run = await services.waiter.wait(result.run_id, max(deadline - anyio.current_time(), 0), watch)
        # A steer taken in by the running run is answered by that run's reply.
        while run is not None and run.steered_into and (left := deadline - anyio.current_time()) > 0:
            run = await services.waiter.wait(run.steered_into, left)
        return result.finish_over_http(run)
    except anyio.get_cancelled_exc_class():
        if abandon_cancels:
            with anyio.CancelScope(shield=True):
                await run_in_threadpool(
                    run_control.cancel_run,
                    services,
                    result.run_id,
                )
        raise


def _caller(services: Services, principal: Principal, session_key: str, run_id: str | None) -> ToolContext:
    """The calling session: 400 if malformed, 403 if the token may not act for its agent (from the key
    alone), 400 for an unknown agent or a runId that is not the caller's."""
    ctx = acting_as(services, principal, session_key, run_id, field="sessionKey", unknown_agent_status=400)
    if run_id is not None:
        origin = services.store.runs.get(run_id)
        if origin is None or origin.session_key != ctx.caller_key:
            raise bad_request("runId", "not a run of the calling session")
    return ctx
