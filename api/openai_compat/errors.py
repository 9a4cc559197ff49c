"""Errors as the release answers them on its OpenAI-compatible routes: ``{"error": {"message", "type"}}``
(not clawbus's ``{ok: false, ...}``), plain-text ``Not Found`` and ``Method Not Allowed``, and request
bodies refused with the texts of its schema library (zod: ``<path>: Invalid input: expected string,
received number``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic_core import ErrorDetails

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.base.js_values import js_type

INVALID_REQUEST = "invalid_request_error"
API_ERROR = "api_error"


class OpenAIError(ClawbusError):
    """An answer in the release's error envelope, raised anywhere in a request."""

    def __init__(
        self,
        status: int,
        message: str,
        type_: str = INVALID_REQUEST,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.headers = status, message, type_, headers

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.type)

    def response(self) -> Response:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


class PlainError(ClawbusError):
    """The release's plain-text answers: a disabled endpoint is no route at all (404), a wrong method 405."""

    def __init__(self, status: int, text: str, allow: str | None = None) -> None:
        super().__init__(text)
        self.status, self.text, self.allow = status, text, allow

    def response(self) -> Response:
        headers = {"Allow": self.allow} if self.allow else None
        return PlainTextResponse(self.text, status_code=self.status, headers=headers)


def error_body(message: str, type_: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_}}


def invalid(message: str) -> OpenAIError:
    return OpenAIError(400, message)


def not_found() -> PlainError:
    return PlainError(404, "Not Found")


def method_not_allowed(allow: str) -> PlainError:
    return PlainError(405, "Method Not Allowed", allow)


# --- request bodies refused as zod refuses them -----------------------------------------------------------

_EXPECTED = {
    "string_type": "string",
    "bool_type": "boolean",
    "float_type": "number",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}
_BOUNDS = {
    "greater_than": ("Too small", ">", "gt"),
    "greater_than_equal": ("Too small", ">=", "ge"),
    "less_than": ("Too big", "<", "lt"),
    "less_than_equal": ("Too big", "<=", "le"),
}


def schema_message(errors: Sequence[ErrorDetails], unions: Iterable[str] = ()) -> str:
    """The release's text for the first problem of a body: ``<dotted path>: <zod's message>``. Fields that
    are unions in its schema (``unions``) are refused whole with ``Invalid input``, as zod refuses a union
    none of whose members matched. Every required field the bodies have is a string (or such a union)."""
    first = errors[0]
    path = [str(part) for part in first["loc"]]
    if path and path[0] in set(unions):
        return f"{path[0]}: Invalid input"
    if first["type"] == "extra_forbidden":
        return f'{".".join(path[:-1])}: Unrecognized key: "{path[-1]}"'
    return f"{'.'.join(path)}: {_zod_text(first)}"


def _zod_text(error: ErrorDetails) -> str:
    kind, given, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "Invalid input: expected string, received undefined"
    if kind == "js_type":
        return f"Invalid input: expected {ctx['expected']}, received {js_type(given)}"
    if kind == "int_type":
        number = isinstance(given, int | float) and not isinstance(given, bool)
        return f"Invalid input: expected {'int' if number else 'number'}, received {js_type(given)}"
    if kind in _EXPECTED:
        return f"Invalid input: expected {_EXPECTED[kind]}, received {js_type(given)}"
    if kind in _BOUNDS:
        label, sign, key = _BOUNDS[kind]
        return f"{label}: expected number to be {sign}{ctx.get(key)}"
    if kind == "literal_error":
        return _literal_text(str(ctx.get("expected", "")))
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return "Invalid input"


def _literal_text(expected: str) -> str:
    """pydantic says ``'low', 'medium' or 'high'``; zod ``one of "low"|"medium"|"high"``."""
    options = re.findall(r"'([^']*)'", expected)
    if len(options) == 1:
        return f'Invalid input: expected "{options[0]}"'
    return "Invalid option: expected one of " + "|".join(f'"{option}"' for option in options)
