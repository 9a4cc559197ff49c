"""``Idempotency-Key`` on the requests that create or change work (docs/architecture.md, "Idempotency"): the
seed of the runs a request makes, the same for every repeat of it within ``gateway.idempotency.ttlHours``;
422 when the key was first used for another request."""

from __future__ import annotations

from typing import Any

from fastapi import Request

from api.auth import Principal
from api.errors import ApiError
from api.services import Services
from shared.idempotency import HEADER, MAX_KEY_CHARS, KeyReused, fingerprint


def seed(services: Services, principal: Principal, request: Request, body: Any) -> str | None:
    """The request's seed, or None without the header (every request then makes its own runs)."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    if not key.strip() or len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise ApiError(
            400, "invalid_request", f"{HEADER} must be 1-{MAX_KEY_CHARS} printable characters", HEADER
        )
    request_print = fingerprint(request.method, request.url.path, body, principal.name)
    ttl = int(services.config.gateway.idempotency.ttl_hours * 3600)
    try:
        return services.store.idempotency.claim(
            principal.name, key, request_print, ttl_seconds=ttl, now_ms=services.store.clock.now_ms()
        ).seed
    except KeyReused:
        raise ApiError(
            422, "invalid_request", f"{HEADER} {key} was used for another request", HEADER
        ) from None
