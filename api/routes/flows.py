"""Flows: a send's or spawn's exchange, step by step, with its stop reason and delivery state (redacted;
unknown to a token that may act for neither of its sessions)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.concurrency import run_in_threadpool

from clawbus.api import idempotency
from clawbus.api.auth import Principal
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse, not_found
from clawbus.api.services import Services
from clawbus.shared.domain import logs
from clawbus.shared.domain.redaction import scrubbed_flow
from clawbus.shared.flows import run_control
from clawbus.shared.flows.view import describe
from clawbus.shared.wire.models import Flow

router = APIRouter(prefix="/v1/flows", tags=["flows"])
# A flow's id is its primary run's, a UUID; its steps' ids are derived from it.
FlowId = Annotated[
    str, Path(pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
]
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 401, 404)}


def _flow_for(services: Services, principal: Principal, flow_id: str) -> Flow:
    flow = describe(services.store, flow_id)
    if flow is None or not (
        principal.may_act_as(flow.requester_key) or principal.may_act_as(flow.target_key)
    ):
        raise not_found(f"Flow not found: {flow_id}")
    return flow


@router.get("/{flow_id}", responses=_errors)
def get_flow(flow_id: FlowId, services: ServicesDep, principal: PrincipalDep) -> dict[str, Any]:
    return scrubbed_flow(_flow_for(services, principal, flow_id)).wire()


@router.post("/{flow_id}/cancel", responses=_errors, response_model=dict[str, Any])
async def cancel_flow(
    flow_id: FlowId, request: Request, services: ServicesDep, principal: PrincipalDep
) -> Response:
    """End the flow, ``stopReason: canceled``: its running step is aborted and no further step starts.
    Returns the flow. A flow that had already ended is returned as it is. A repeat with the first
    request's Idempotency-Key gets the first answer."""

    async def answer(_seed: str | None) -> dict[str, Any]:
        return await run_in_threadpool(_cancelled, services, principal, flow_id)

    return await idempotency.answered_once(services, principal, request, None, answer)


def _cancelled(services: Services, principal: Principal, flow_id: str) -> dict[str, Any]:
    with logs.bound(flow_id=flow_id):
        _flow_for(services, principal, flow_id)
        run_control.cancel_flow(services, flow_id)
        return scrubbed_flow(_flow_for(services, principal, flow_id)).wire()
