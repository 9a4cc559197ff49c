"""A session's sub-agents over HTTP (docs/contract.md §10): the ``subagents`` tool's list, info, kill and
steer, and ``session_status``'s card, each answered as the session in the path would see it.

The routes call the tools' own code (``TOOLS[name].invoke``) with a context whose caller is that session,
so the HTTP answer and an agent's tool call cannot drift apart. Where a tool answers a refusal as a result,
these routes answer an error instead (a REST client reads the status code): 404 for a target that is no
sub-agent of the session, 403 for what the tool forbids, 400 for the rest; each names what is wrong.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clawbus.api import idempotency
from clawbus.api.auth import Principal
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ApiError, ErrorResponse, bad_request, not_found
from clawbus.api.params import SessionKeyPath
from clawbus.api.routes.resolve import session_context
from clawbus.api.services import Services
from clawbus.shared.base.errors import first_invalid
from clawbus.shared.base.text import CONTROL_CLASS
from clawbus.shared.domain import logs
from clawbus.shared.domain.redaction import scrub
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import ToolFailure, Wire
from clawbus.shared.wire.subagents_schema import (
    SessionStatusCard,
    SubagentInfo,
    SubagentsKilled,
    SubagentsList,
    SubagentSteered,
)

router = APIRouter(prefix="/v1/sessions", tags=["subagents"])
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 401, 403, 404)}
# The tool's refusal for a target that matches none of the session's sub-agents (shared/tools/subagents.py):
# over HTTP that is a 404 on the path's target, not a bad request.
_NO_SUCH_SUBAGENT = "No sub-agent of this session matches"

# The tool's ``target`` (a SessionRef): 1..512 characters, none of them a control character. Published as
# the check is, so a client generated from the schema never sends what the server refuses.
Target = Annotated[
    str,
    Path(
        min_length=1,
        max_length=512,
        pattern=rf"^[^{CONTROL_CLASS}]+$",
        description="A sub-agent's session key (at any depth) or a direct child's label; kill also takes all",
    ),
]

W = TypeVar("W", bound=Wire)


class SteerBody(BaseModel):
    """``POST /v1/sessions/{key}/subagents/{target}/steer``: what to tell the running sub-agent."""

    model_config = ConfigDict(extra="forbid")

    # The tool checks it again (gateway.limits.messageBytes); the schema says what it can say statically.
    message: str = Field(min_length=1, pattern=r"\S", description="Reaches the sub-agent at its next step")


@router.get(
    "/{key}/subagents", response_model=SubagentsList, response_model_exclude_none=True, responses=_errors
)
def list_subagents(
    key: SessionKeyPath,
    services: ServicesDep,
    principal: PrincipalDep,
    recursive: Annotated[bool, Query(description="Their sub-agents too, to the last level")] = False,
) -> SubagentsList:
    """The session's sub-agents (with ``recursive``, the whole tree below it, parents first)."""
    ctx = _session(services, principal, key)
    return _call(ctx, "subagents", {"action": "list", "recursive": recursive}, SubagentsList)


@router.get(
    "/{key}/subagents/{target}",
    response_model=SubagentInfo,
    response_model_exclude_none=True,
    responses=_errors,
)
def subagent_info(
    key: SessionKeyPath, target: Target, services: ServicesDep, principal: PrincipalDep
) -> SubagentInfo:
    """One sub-agent: its row, timestamps, and its latest run with that run's error (redacted)."""
    ctx = _session(services, principal, key)
    info = _call(ctx, "subagents", {"action": "info", "target": target}, SubagentInfo)
    # The API shows a run's error redacted (GET /v1/runs/{id}); the same error seen from here is too.
    return info.model_copy(update={"last_error": scrub(info.last_error)})


@router.post(
    "/{key}/subagents/{target}/kill",
    response_model=SubagentsKilled,
    response_model_exclude_none=True,
    responses=_errors,
)
async def kill_subagent(
    key: SessionKeyPath, target: Target, request: Request, services: ServicesDep, principal: PrincipalDep
) -> Response:
    """Stop the target (or ``all`` the session's children) and everything it spawned; the sessions
    stopped, the targets first (a target that had already ended stops nothing: ``killed: []``; a repeat
    with the first request's Idempotency-Key gets the first answer)."""
    args = {"action": "kill", "target": target}
    return await _answered_once(services, principal, request, key, args, SubagentsKilled)


@router.post(
    "/{key}/subagents/{target}/steer",
    response_model=SubagentSteered,
    response_model_exclude_none=True,
    responses=_errors,
)
async def steer_subagent(
    key: SessionKeyPath,
    target: Target,
    body: SteerBody,
    request: Request,
    services: ServicesDep,
    principal: PrincipalDep,
) -> Response:
    """The message reaches a running target at its next model step; one that is not running gets it as a
    run of its own (``delivered`` says which). Repeated with its Idempotency-Key, it steers once."""
    args = {"action": "steer", "target": target, "message": body.message}
    return await _answered_once(services, principal, request, key, args, SubagentSteered)


async def _answered_once(
    services: Services,
    principal: Principal,
    request: Request,
    key: str,
    args: dict[str, Any],
    answer_type: type[W],
) -> Response:
    """The ``subagents`` action as the session in the path, once per Idempotency-Key."""

    def act(seed: str | None) -> dict[str, Any]:
        ctx = _session(services, principal, key)
        if seed is not None:
            ctx = dataclasses.replace(ctx, id_seed=seed)
        return _call(ctx, "subagents", args, answer_type).wire()

    async def answer(seed: str | None) -> dict[str, Any]:
        return await run_in_threadpool(act, seed)

    return await idempotency.answered_once(services, principal, request, args, answer)


@router.get(
    "/{key}/status", response_model=SessionStatusCard, response_model_exclude_none=True, responses=_errors
)
def session_status(key: SessionKeyPath, services: ServicesDep, principal: PrincipalDep) -> SessionStatusCard:
    """The session's status card: model, tokens, cost, runs, children pending, ``state``."""
    ctx = _session(services, principal, key)
    # A card needs an entry: without one, the tool's "has no session yet" is a 404 here.
    if not services.store.sessions.exists(ctx.caller_key):
        raise not_found(f"Session not found: {key}")
    return _call(ctx, "session_status", {}, SessionStatusCard)


def _session(services: Services, principal: Principal, key: str) -> ToolContext:
    """The session in the path as the caller, authorised as every session route is. Its entry need not
    exist: a session that spawned before it ever ran (an operator's spawn as ``main``) has children and no
    entry, and its sub-agents are still its to list and stop."""
    return session_context(services, principal, key)


def _call(ctx: ToolContext, name: str, args: dict[str, Any], answer: type[W]) -> W:
    """The tool's own code, as the session. Not the tool set's refusal (``Tool.refusal``): that keeps a
    sub-agent's *model* to its tools, while the caller here is the token's principal, who may act for the
    session's agent whatever its role."""
    with logs.bound(session_key=ctx.caller_key):
        try:
            result: Wire | AwaitRun = TOOLS[name].invoke(ctx, args)
        except ValidationError as exc:
            field, message = first_invalid(exc.errors())
            raise bad_request(field, message) from None
    if isinstance(result, ToolFailure):
        raise _refused(result)
    # Neither tool waits for a run, so the answer is already the result the route promises.
    assert isinstance(result, answer), result
    return result


def _refused(failure: ToolFailure) -> ApiError:
    if failure.error.startswith(_NO_SUCH_SUBAGENT):
        return ApiError(404, "not_found", failure.error, "target")
    if failure.status == "forbidden":
        return ApiError(403, "forbidden", failure.error)
    return ApiError(400, "invalid_request", failure.error)
