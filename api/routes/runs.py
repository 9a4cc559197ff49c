"""Runs: read one, read its events (text streams in as the model writes it), or wait for it to end (the
gateway's ``agent.wait``). Secrets in what they return are
redacted; a run of a session the token may not act for is unknown to it (404, like a missing one)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from clawbus.api import idempotency, streams
from clawbus.api.auth import Principal
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ApiError, ErrorResponse, not_found
from clawbus.api.params import LastEventId, StreamId
from clawbus.api.services import Services
from clawbus.shared.domain import logs
from clawbus.shared.domain.redaction import scrub, scrubbed_run
from clawbus.shared.domain.runs import CancelOutcome
from clawbus.shared.flows import run_control
from clawbus.shared.wire.models import Run, RunStatus

router = APIRouter(prefix="/v1/runs", tags=["runs"])
RunId = Annotated[str, Path(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 401, 404)}
# Proxies must neither cache nor buffer an event stream.
STREAM_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
# How long a cancel of a running run waits for its worker to stop it (it does within about a second) before
# answering with the run as it is, still ``running`` with ``cancelRequested``.
CANCEL_WAIT_SECONDS = 5.0


async def _run_for(services: Services, principal: Principal, run_id: str) -> Run:
    run = await services.waiter.read(run_id)
    if run is None or not principal.may_act_as(run.session_key):
        raise not_found(f"Run not found: {run_id}")
    return run


@router.get("/{run_id}", responses=_errors)
async def get_run(run_id: RunId, services: ServicesDep, principal: PrincipalDep) -> dict[str, Any]:
    with logs.bound(run_id=run_id):
        return scrubbed_run(await _run_for(services, principal, run_id)).wire()


@router.get("/{run_id}/wait", responses=_errors)
async def wait_run(
    run_id: RunId,
    services: ServicesDep,
    principal: PrincipalDep,
    timeout: Annotated[
        float, Query(ge=0, description="Seconds to wait (capped at gateway.maxWaitSeconds)")
    ] = 30,
) -> dict[str, Any]:
    """The run once terminal; ``{runId, status: "timeout"}`` after ``timeout`` s (the run is untouched),
    with an ``error`` saying so when gateway.maxWaitSeconds cut the wait shorter than asked."""
    with logs.bound(run_id=run_id):
        await _run_for(services, principal, run_id)
        cap = services.config.gateway.max_wait_seconds
        run = await services.waiter.wait(run_id, min(timeout, cap))
        if run is None:
            raise not_found(f"Run not found: {run_id}")
        if not run.status.terminal:
            if timeout <= cap:
                return {"runId": run_id, "status": "timeout"}
            # No sessionKey here: clients tell this answer from a run that ended ``timeout`` by its absence.
            error = (
                f"{timed_out(timeout, cap)}; the run continues: wait again with GET /v1/runs/{run_id}/wait"
            )
            return {"runId": run_id, "status": "timeout", "error": error}
        return scrubbed_run(run).wire()


@router.get("/{run_id}/events", responses=_errors)
async def run_events(
    run_id: RunId,
    services: ServicesDep,
    principal: PrincipalDep,
    after: StreamId = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> dict[str, Any]:
    """The run's event stream (queued, started, text pieces as the model streams them, ended), oldest
    first; page on with ``after`` = the last id seen."""
    with logs.bound(run_id=run_id):
        await _run_for(services, principal, run_id)
        entries = await services.live.run_events(run_id, after, limit)
        events = [{"id": entry_id, **_scrubbed(fields)} for entry_id, fields in entries]
        return {"runId": run_id, "events": events, "last": events[-1]["id"] if events else after}


def _scrubbed(fields: dict[str, str]) -> dict[str, str]:
    return {name: (scrub(value) or "") if name == "text" else value for name, value in fields.items()}


@router.get(
    "/{run_id}/stream",
    responses={**_errors, 200: {"content": {"text/event-stream": {}}}},
    response_class=StreamingResponse,
)
async def stream_run(
    run_id: RunId,
    request: Request,
    services: ServicesDep,
    principal: PrincipalDep,
    last_event_id: LastEventId = None,
    after: StreamId = None,
) -> StreamingResponse:
    """The run's events as server-sent events, live, until its ``ended`` event: ``id`` (resume with
    ``Last-Event-ID``), ``event`` (the type), ``data`` (the event as JSON)."""
    await _run_for(services, principal, run_id)
    events = streams.run_events(services.live, run_id, last_event_id or after, request.is_disconnected)
    return StreamingResponse(events, media_type="text/event-stream", headers=STREAM_HEADERS)


@router.post(
    "/{run_id}/cancel", responses={**_errors, 409: {"model": ErrorResponse}}, response_model=dict[str, Any]
)
async def cancel_run(
    run_id: RunId, request: Request, services: ServicesDep, principal: PrincipalDep
) -> Response:
    """End the run ``aborted`` wherever it is: queued or parked at once, running at its model's next
    streamed chunk or tool call (what it had said is kept, marked aborted). Returns the run. Cancelling an
    aborted run returns it; one that ended otherwise is a 409 naming its status. A repeat with the first
    request's Idempotency-Key gets the first answer."""

    async def answer(_seed: str | None) -> dict[str, Any]:
        return await _cancelled(services, principal, run_id)

    return await idempotency.answered_once(services, principal, request, None, answer)


async def _cancelled(services: Services, principal: Principal, run_id: str) -> dict[str, Any]:
    with logs.bound(run_id=run_id):
        await _run_for(services, principal, run_id)
        cancelled = await run_in_threadpool(run_control.cancel_cascading, services, run_id)
        if cancelled.outcome is CancelOutcome.MISSING:
            raise not_found(f"Run not found: {run_id}")
        if cancelled.outcome is CancelOutcome.ENDED and cancelled.status is not RunStatus.ABORTED:
            status = cancelled.status.value if cancelled.status else "unknown"
            raise ApiError(409, "conflict", f"Run {run_id} already ended with status {status}")
        if cancelled.outcome is CancelOutcome.CANCELLING:
            run = await services.waiter.wait(run_id, CANCEL_WAIT_SECONDS)
        else:
            run = await services.waiter.read(run_id)
        if run is None:
            raise not_found(f"Run not found: {run_id}")
        return scrubbed_run(run).wire()


def timed_out(asked_seconds: float, cap_seconds: float) -> str:
    """``timed out after <n>s``, saying when gateway.maxWaitSeconds held the wait shorter than asked, lest
    the caller believe it waited what it asked for."""
    return (
        f"timed out after {cap_seconds:g}s (gateway.maxWaitSeconds={cap_seconds:g} caps a wait over HTTP; "
        f"{asked_seconds:g}s were asked for)"
    )
