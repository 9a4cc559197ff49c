"""``GET /v1/status``: the fleet at a glance (owner tokens): queues, workers, work in flight, totals, each
model's traffic (limits, in use, waiting, cooldown); and
``GET /v1/inflight``: which sessions have runs under way, and which flows."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from clawbus.api.auth import forbidden
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse
from clawbus.shared.domain.traffic_view import traffic_rows
from clawbus.shared.wire.fleet import FleetView
from clawbus.shared.wire.models import InFlightLane, InFlightView
from clawbus.workers import queues

router = APIRouter(tags=["fleet"])
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (401, 403)}


@router.get("/v1/status", response_model=FleetView, response_model_exclude_none=True, responses=_errors)
def status(services: ServicesDep, principal: PrincipalDep) -> FleetView:
    if not principal.owner:
        raise forbidden("the fleet status needs an owner token")
    figures = services.store.fleet.figures(queues.ALL)
    traffic = services.store.traffic
    return FleetView(
        queues=figures.queue_depths,
        workers=figures.workers,
        busy_lanes=figures.busy_lanes,
        flows_in_progress=figures.flows_in_progress,
        reaper_ran_at=figures.reaper_ran_at,
        cold_moves_failed=figures.cold_moves_failed,
        cold_move_failure=figures.cold_move_failure,
        runs_stalled=figures.runs_stalled,
        run_stalls=figures.run_stalls,
        stalled_runs=services.store.runs.stalled() if figures.runs_stalled else [],
        runs_created=figures.runs_created,
        runs_finished={f"{kind}:{state}": n for (kind, state), n in figures.runs_finished.items()},
        deliveries=figures.deliveries,
        models=traffic_rows(services.config, traffic.snapshot(traffic.models())),
    )


@router.get("/v1/inflight", response_model=InFlightView, responses={400: {"model": ErrorResponse}, **_errors})
def in_flight(
    services: ServicesDep,
    principal: PrincipalDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Most sessions (and flows) listed")] = 200,
) -> InFlightView:
    if not principal.owner:
        raise forbidden("work in flight across sessions needs an owner token")
    found = services.store.fleet.in_flight(limit)
    return InFlightView(
        lanes=[InFlightLane(session_key=key, run_ids=runs) for key, runs in found.lanes], flows=found.flows
    )
