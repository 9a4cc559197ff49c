"""What the API refused."""

from __future__ import annotations

import contextlib

import httpx


class APIError(Exception):
    """The API refused a request (4xx/5xx); ``type``, ``field`` and ``status`` say why. (Named as the
    ``openai`` SDK names its own; the server's root error, ``clawbus.shared.base.errors.ClawbusError``, is
    another class, which a thin client never sees.)"""

    def __init__(self, status: int, type_: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.type, self.message, self.field = status, type_, message, field
        # Seconds the server asked to wait before sending again (its Retry-After), when it said.
        self.retry_after: float | None = None


def refusal(response: httpx.Response) -> APIError:
    """The error a response of status >= 400 says, in the API's ``{"error": {type, message, field}}``."""
    try:
        error = response.json().get("error") or {}
    except ValueError:
        error = {}
    failure = APIError(
        response.status_code,
        error.get("type", "http_error"),
        error.get("message", response.text[:200]),
        error.get("field"),
    )
    with contextlib.suppress(ValueError):
        failure.retry_after = float(response.headers.get("retry-after", ""))
    return failure
