"""Probes: ``/healthz`` (the process answers) and ``/readyz`` (it can reach Redis)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from redis.exceptions import RedisError

from api.deps import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, Any]:
    return {"ok": True}


@router.get("/readyz", response_model=None)
async def readyz(services: ServicesDep) -> dict[str, Any] | JSONResponse:
    redis = services.async_redis
    try:
        await redis.ping()
        workers = [key async for key in redis.scan_iter(services.store.keys.worker_heartbeat_pattern())]
    except (RedisError, OSError) as exc:
        return JSONResponse({"ok": False, "redis": f"unavailable: {exc}"}, status_code=503)
    return {"ok": True, "redis": "ok", "workers": len(workers)}
