"""One error envelope for every route: ``{ok: false, error: {type, message, field?}}``.

Bad input is a 4xx naming the field; Redis being away is a 503 a client can retry; nothing is a bare 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from clawbus.api.waits import ShuttingDown
from clawbus.shared.base.errors import ClawbusError, Unavailable, first_invalid
from clawbus.shared.ports.dispatch import DispatchUnavailable
from clawbus.shared.ports.storage import ColdStoreUnavailable, NotReplicated, StoreFull

log = logging.getLogger(__name__)

# The routes the release has too, whose every answer follows it.
OPENCLAW_PATHS = frozenset({"/tools/invoke", "/v1/chat/completions", "/v1/responses", "/v1/models"})


class ErrorBody(BaseModel):
    type: str
    message: str
    field: str | None = None
    # A wait the API ended early (it is stopping): the run to wait on again, elsewhere.
    run_id: str | None = Field(None, serialization_alias="runId")


class ErrorResponse(BaseModel):
    ok: bool = False
    error: ErrorBody


class ApiError(ClawbusError):
    def __init__(self, status: int, type_: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.field = status, type_, message, field


class GatewayError(ClawbusError):
    """An error the release answers in its plain gateway envelope, ``{error: {message, type}}`` (no ``ok``):
    a body that is no JSON, a missing or wrong token, and every error of the OpenAI-compatible routes."""

    def __init__(self, status: int, message: str, type_: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.type = status, message, type_


def gateway_response(
    status: int, message: str, type_: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": type_}}, status_code=status, headers=headers)


async def openclaw_json(request: Request) -> Any:
    """A request body read as the release reads one: blank is ``{}``, JSON ``null`` is ``{}``, anything that
    does not parse is a 400 in the gateway envelope naming the parser's complaint. The content type is
    not looked at."""
    text = (await request.body()).strip()
    if not text:
        return {}
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GatewayError(400, str(exc)) from None
    return {} if data is None else data


def bad_request(field: str, message: str) -> ApiError:
    return ApiError(400, "invalid_request", f"{field}: {message}", field)


def not_found(message: str) -> ApiError:
    return ApiError(404, "not_found", message)


def unavailable_message(exc: Unavailable) -> str:
    """What a client is told when Redis is away (every route answers it 503, with ``Retry-After``)."""
    if isinstance(exc, DispatchUnavailable):
        return "the queue is unavailable (the work may not have been queued); retry shortly"
    if isinstance(exc, NotReplicated):
        return f"the store's replicas did not confirm the write ({exc}); it may have been kept"
    if isinstance(exc, StoreFull):
        return "the store is out of memory (Redis maxmemory); nothing was written; retry once it is freed"
    return "the store is unavailable; retry shortly"


def error_response(
    status: int,
    type_: str,
    message: str,
    field: str | None = None,
    headers: dict[str, str] | None = None,
    run_id: str | None = None,
) -> JSONResponse:
    body = ErrorResponse(error=ErrorBody(type=type_, message=message, field=field, run_id=run_id))
    return JSONResponse(
        body.model_dump(exclude_none=True, by_alias=True), status_code=status, headers=headers
    )


def validation_response(errors: Sequence[Any], prefix: str = "") -> JSONResponse:
    first = errors[0]
    if first["type"] == "json_invalid":
        detail = (first.get("ctx") or {}).get("error", "malformed")
        return error_response(400, "invalid_request", f"body: invalid JSON ({detail})", "body")
    field, message = first_invalid(errors, prefix)
    return error_response(400, "invalid_request", f"{field}: {message}", field)


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.message, exc.field)

    @app.exception_handler(GatewayError)
    async def _gateway_error(_: Request, exc: GatewayError) -> JSONResponse:
        return gateway_response(exc.status, exc.message, exc.type)

    @app.exception_handler(RequestValidationError)
    async def _request_invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_response(exc.errors())

    @app.exception_handler(ValidationError)
    async def _model_invalid(_: Request, exc: ValidationError) -> JSONResponse:
        return validation_response(exc.errors())

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        kinds = {
            401: "unauthorized",
            403: "forbidden",
            404: "not_found",
            405: "method_not_allowed",
            413: "too_large",
        }
        headers = dict(exc.headers) if exc.headers else {}
        if exc.status_code == 401:
            # The release's words for a missing or wrong token, on every route.
            return gateway_response(401, "Unauthorized", "unauthorized", headers)
        if exc.status_code == 405 and request.url.path in OPENCLAW_PATHS:
            return PlainTextResponse(
                "Method Not Allowed", 405, {"Allow": ", ".join(_allowed_methods(request))}
            )
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed_methods(request))
        return error_response(
            exc.status_code,
            kinds.get(exc.status_code, "http_error"),
            str(exc.detail),
            headers=headers or None,
        )

    @app.exception_handler(ShuttingDown)
    async def _stopping(_: Request, exc: ShuttingDown) -> JSONResponse:
        return error_response(503, "unavailable", str(exc), headers={"Retry-After": "1"}, run_id=exc.run_id)

    @app.exception_handler(Unavailable)
    async def _redis_down(_: Request, exc: Unavailable) -> JSONResponse:
        log.error("redis unavailable: %s", exc)
        return error_response(503, "unavailable", unavailable_message(exc), headers={"Retry-After": "1"})

    @app.exception_handler(ColdStoreUnavailable)
    async def _cold_store_down(_: Request, exc: ColdStoreUnavailable) -> JSONResponse:
        # A read of older messages met the cold store refusing; what Redis holds is unaffected.
        log.error("cold transcript store unavailable: %s", exc)
        message = "the cold transcript store is unavailable (older messages cannot be read); retry shortly"
        return error_response(503, "unavailable", message, headers={"Retry-After": "5"})


def _allowed_methods(request: Request) -> list[str]:
    """Every method the path answers to, over all its routes: Starlette names only the first route's."""
    methods: set[str] = set()
    for route in _api_routes(request.app.routes):
        if route.methods and route.path_regex.match(request.url.path):
            methods |= route.methods
    return sorted(methods)


def _api_routes(routes: Sequence[Any]) -> Iterator[APIRoute]:
    """Every route of the app, those of included routers too (FastAPI keeps an included router whole, as
    an entry holding ``original_router``)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif (router := getattr(route, "original_router", None)) is not None:
            yield from _api_routes(router.routes)
