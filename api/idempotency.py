"""``Idempotency-Key`` on the requests that create or change work (docs/architecture.md, "Idempotency"): the
seed of the runs a request makes, the same for every repeat of it within ``gateway.idempotency.ttlHours``;
the answer its first use gave, given again to a repeat; 422 when the key was first used for another request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from starlette.background import BackgroundTask
from starlette.responses import Response

from clawbus.api.auth import Principal
from clawbus.api.errors import ApiError
from clawbus.api.services import Services
from clawbus.shared.domain.idempotency import HEADER, MAX_KEY_CHARS, KeyReused, fingerprint
from clawbus.shared.ports.storage import StoreUnavailable

log = logging.getLogger(__name__)

# A longer answer is not kept: its repeat runs again, which the seed keeps from making anything new.
MAX_ANSWER_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class Keyed:
    """A request under a key: its runs' seed, and the answer its first use gave once it gave one;
    ``first``: this is the key's first use (no run derived from the seed exists yet)."""

    key: str
    seed: str
    answer: str | None
    ttl_seconds: int
    first: bool = False


def claim(services: Services, principal: Principal, request: Request, body: Any) -> Keyed | None:
    """The request's key, claimed; None without the header (every request then makes its own runs)."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    return claim_key(services, principal, key, request.method, request.url.path, body)


def claim_key(
    services: Services, principal: Principal, key: str, method: str, route: str, body: Any
) -> Keyed:
    """``key`` claimed for the request ``method route body`` (MCP names its tool calls so too)."""
    if not key.strip() or len(key) > MAX_KEY_CHARS or not key.isprintable():
        raise ApiError(
            400, "invalid_request", f"{HEADER} must be 1-{MAX_KEY_CHARS} printable characters", HEADER
        )
    request_print = fingerprint(method, route, body, principal.name)
    ttl = int(services.config.gateway.idempotency.ttl_hours * 3600)
    try:
        claimed = services.store.idempotency.claim(
            principal.name, key, request_print, ttl_seconds=ttl, now_ms=services.store.clock.now_ms()
        )
    except KeyReused:
        raise ApiError(
            422, "invalid_request", f"{HEADER} {key} was used for another request", HEADER
        ) from None
    return Keyed(key, claimed.seed, claimed.answer, ttl, claimed.first)


def seed(services: Services, principal: Principal, request: Request, body: Any) -> str | None:
    keyed = claim(services, principal, request, body)
    return None if keyed is None else keyed.seed


def remember(services: Services, principal: Principal, keyed: Keyed | None, answer: str) -> None:
    if keyed is not None and len(answer) <= MAX_ANSWER_BYTES:
        services.store.idempotency.remember(principal.name, keyed.key, answer, ttl_seconds=keyed.ttl_seconds)


async def answered_once(
    services: Services,
    principal: Principal,
    request: Request,
    body: Any,
    produce: Callable[[str | None], Awaitable[Any]],
) -> Response:
    """The request's answer: ``produce(seed)``'s (JSON), kept under its key; a repeat gets the kept one.
    An error status is not kept (a repeat is judged again), nor is anything while the first is still going: a
    repeat then runs beside it, and the seed makes its runs the first one's."""

    async def from_keyed(keyed: Keyed | None) -> Any:
        return await produce(None if keyed is None else keyed.seed)

    return await answered_once_keyed(services, principal, request, body, from_keyed)


async def answered_once_keyed(
    services: Services,
    principal: Principal,
    request: Request,
    body: Any,
    produce: Callable[[Keyed | None], Awaitable[Any]],
) -> Response:
    """``answered_once`` for a producer that needs the claim itself (whether this is the key's first use).
    The answer is kept after it is sent, off its path: a repeat that comes before that runs beside it, as
    one does while the first is still going."""
    if HEADER not in request.headers:
        return json_response(_encoded(await produce(None)))
    keyed = await run_in_threadpool(claim, services, principal, request, body)
    if keyed is not None and keyed.answer is not None:
        return json_response(keyed.answer)
    answer = _encoded(await produce(keyed))
    return json_response(answer, BackgroundTask(_remember_quietly, services, principal, keyed, answer))


def _remember_quietly(services: Services, principal: Principal, keyed: Keyed | None, answer: str) -> None:
    """After the answer is sent: Redis away now loses only the kept copy (a repeat runs beside)."""
    try:
        remember(services, principal, keyed, answer)
    except StoreUnavailable as exc:
        log.warning("the answer to %s was not kept (%s); a repeat runs again", HEADER, exc)


def _encoded(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def json_response(text: str, background: BackgroundTask | None = None) -> Response:
    return Response(text.encode(), media_type="application/json", background=background)
