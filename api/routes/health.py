"""Probes: ``/healthz`` (the process answers) and ``/readyz`` (it can reach Redis)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from clawbus.api.deps import ServicesDep
from clawbus.shared.ports.storage import StoreUnavailable

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, Any]:
    return {"ok": True}


@router.get("/readyz", response_model=None)
async def readyz(services: ServicesDep) -> dict[str, Any] | JSONResponse:
    try:
        workers = await services.live.workers_alive()
    except StoreUnavailable as exc:
        return JSONResponse({"ok": False, "redis": f"unavailable: {exc}"}, status_code=503)
    return {"ok": True, "redis": "ok", "workers": workers}
