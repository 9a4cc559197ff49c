"""Errors the domain raises across modules, and the root of every error clawbus raises."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic.alias_generators import to_camel


class ClawbusError(Exception):
    """What every exception class of ``shared``, ``workers`` and ``api`` derives from (some from a builtin
    error too, where callers catch that): ``except ClawbusError`` catches clawbus's own errors and nothing
    of a library's (docs/architecture.md, "Errors")."""


class Unavailable(ClawbusError):
    """A service behind a port cannot be reached after its client's own retries: the store
    (``shared.ports.storage.StoreUnavailable``) or the broker (``shared.ports.dispatch.DispatchUnavailable``).
    The call may or may not have taken effect; the API answers it with a 503 and ``Retry-After``."""


class ToolError(ClawbusError):
    """A refusal with contract's text; tools turn it into ``{status, error}``, never into an exception."""

    def __init__(self, error: str, status: str = "error") -> None:
        super().__init__(error)
        self.error = error
        self.status = status


# A validation error whose message is the release's own text for a bad tool argument, whole
# (``limit must be a positive integer``), raised by ``shared.base.tool_args``.
TOOL_INPUT = "tool_input"


def field_path(loc: Sequence[int | str]) -> str:
    """A pydantic error location as the field path a client wrote (``attachments[0].content``)."""
    parts = [p for p in loc if p not in ("body", "query", "path")]
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "body"


def first_invalid(errors: Sequence[Mapping[str, Any]], prefix: str = "") -> tuple[str, str]:
    """The first validation error as (field path, message), the way every edge reports bad input."""
    first = errors[0]
    field = field_path([prefix, *first["loc"]] if prefix else first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    return field, message


def tool_input_error(errors: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """A tool's bad argument as (argument, text): the release's text where it has one, else the argument
    and what is wrong with it (``attachments[0].name: Field required``)."""
    first = errors[0]
    # Named as the caller writes it, whichever spelling it used (a default's location is pydantic's name).
    field = field_path([to_camel(part) if isinstance(part, str) else part for part in first["loc"]])
    if first["type"] == TOOL_INPUT:
        return field, str(first["msg"])
    return field, f"{field}: {first_invalid(errors)[1]}"
