"""Sessions: read, patch, deliver inbound chat messages; the owner's listing of every session."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from clawbus.api import idempotency, streams
from clawbus.api.auth import Principal, forbidden
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ApiError, ErrorResponse, bad_request, not_found
from clawbus.api.params import SessionKeyPath
from clawbus.api.routes.resolve import session_context
from clawbus.api.routes.runs import STREAM_HEADERS
from clawbus.api.routes.tools import settle
from clawbus.api.schemas import SessionPatchBody
from clawbus.api.services import Services
from clawbus.shared.base.session_keys import SessionKind
from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain import logs
from clawbus.shared.domain.sessions import LabelTaken, SessionPatch, new_entry
from clawbus.shared.tools.list import every_session
from clawbus.shared.wire.list_schema import SessionsListParams, SessionsListResult
from clawbus.shared.wire.models import InboundMessageParams, SessionEntry

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])
_errors: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 403, 404, 409, 413)
}


@router.get("", response_model=SessionsListResult, response_model_exclude_none=True, responses=_errors)
def list_sessions(
    services: ServicesDep,
    principal: PrincipalDep,
    # The operator's listing is exact where the tool is lenient: an unknown kind is a 400, not ignored.
    kind: Annotated[list[SessionKind] | None, Query(max_length=6)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    active_minutes: Annotated[int | None, Query(alias="activeMinutes", ge=1)] = None,
) -> SessionsListResult:
    """Every session, whatever visibility says (owner tokens only): the operator's view."""
    if not principal.owner:
        raise forbidden("listing every session needs an owner token")
    params = SessionsListParams(kinds=kind, limit=limit, active_minutes=active_minutes)
    return every_session(services, params)


@router.get("/{key}", response_model=SessionEntry, response_model_exclude_none=True, responses=_errors)
def get_session(key: SessionKeyPath, services: ServicesDep, principal: PrincipalDep) -> SessionEntry:
    ctx = session_context(services, principal, key)
    entry = services.store.sessions.get(ctx.caller_key)
    if entry is None:
        raise not_found(f"Session not found: {key}")
    return entry


@router.put(
    "/{key}",
    response_model=SessionEntry,
    response_model_exclude_none=True,
    responses={**_errors, 201: {"model": SessionEntry}},
)
def open_session(
    key: SessionKeyPath, services: ServicesDep, principal: PrincipalDep, response: Response
) -> SessionEntry:
    """Open the session if it does not exist yet (201), else answer it as it is (200): OpenClaw's
    ``sessions.create``. A send never opens one; chat messages, spawns and this do."""
    ctx = session_context(services, principal, key)
    created = services.store.sessions.create(
        new_entry(services.config, ctx.caller_key, services.store.clock.now_ms())
    )
    entry = services.store.sessions.get(ctx.caller_key)
    if entry is None:  # deleted again in between
        raise not_found(f"Session not found: {key}")
    response.status_code = 201 if created else 200
    return entry


@router.patch("/{key}", response_model=SessionEntry, response_model_exclude_none=True, responses=_errors)
async def patch_session(
    key: SessionKeyPath,
    body: SessionPatchBody,
    request: Request,
    services: ServicesDep,
    principal: PrincipalDep,
) -> Response:
    changes = body.model_dump(by_alias=True, exclude_unset=True)

    async def answer(_seed: str | None) -> dict[str, Any]:
        patched = await run_in_threadpool(_patched, services, principal, key, changes)
        return patched.model_dump(mode="json", by_alias=True, exclude_none=True)

    return await idempotency.answered_once(services, principal, request, changes, answer)


def _patched(services: Services, principal: Principal, key: str, changes: dict[str, Any]) -> SessionEntry:
    ctx = session_context(services, principal, key)
    if "sendPolicy" in changes and not principal.owner:
        raise forbidden("changing sendPolicy needs an owner token")
    entry = services.store.sessions.get(ctx.caller_key)
    if entry is None:
        raise not_found(f"Session not found: {key}")
    if changes.get("model") is not None and changes["model"] not in services.config.models.refs():
        raise bad_request("model", f"invalid model: {changes['model']}")
    try:
        patched = services.store.sessions.patch(entry, SessionPatch(changes))
    except LabelTaken as exc:
        raise ApiError(409, "conflict", f"label: {exc}", "label") from None
    if patched is None:
        raise not_found(f"Session not found: {key}")
    return patched


@router.post("/{key}/messages", responses=_errors, response_model=dict[str, Any])
async def post_message(
    key: SessionKeyPath,
    body: InboundMessageParams,
    request: Request,
    services: ServicesDep,
    principal: PrincipalDep,
) -> Response:
    limit = services.config.gateway.limits.message_bytes
    size = len(body.message.encode("utf-8"))
    if size > limit:
        raise bad_request("message", f"too large: {size} bytes (limit {limit})")
    arrived = anyio.current_time()
    ctx = session_context(services, principal, key)

    async def answer(seed: str | None) -> dict[str, Any]:
        keyed = ctx if seed is None else dataclasses.replace(ctx, id_seed=seed)
        with logs.bound(session_key=ctx.caller_key):
            result = await run_in_threadpool(receive, keyed, body)
            return (await settle(services, result, arrived)).wire()

    return await idempotency.answered_once(
        services, principal, request, body.model_dump(mode="json", by_alias=True), answer
    )


@router.get(
    "/{key}/stream",
    responses={**_errors, 200: {"content": {"text/event-stream": {}}}},
    response_class=StreamingResponse,
)
async def stream_session(
    key: SessionKeyPath, request: Request, services: ServicesDep, principal: PrincipalDep
) -> StreamingResponse:
    """Every run of the session as server-sent events, those under way and those to come, until the
    client leaves; each event carries its ``runId``."""
    ctx = session_context(services, principal, key)
    if not services.store.sessions.exists(ctx.caller_key):
        raise not_found(f"Session not found: {key}")
    events = streams.session_events(services.live, ctx.caller_key, request.is_disconnected)
    return StreamingResponse(events, media_type="text/event-stream", headers=STREAM_HEADERS)
