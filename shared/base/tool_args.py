"""Tool arguments read as OpenClaw 2026.9.6 reads them (docs/contract.md, "On the wire").

The release validates no schema: each tool reads its arguments one by one, leniently. A text that is no
string is absent; a count may be a number or a numeric string and must be a whole number in range; a flag
is anything truthy; a list may be one string. What it refuses, it refuses with a short text naming the
argument (``limit must be a positive integer``, ``message required``), a ``tool_error`` over HTTP. These
validators give the parameter models of ``shared/tools/*_schema.py`` exactly those rules and texts.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from clawbus.shared.base.errors import TOOL_INPUT

# What the release takes for a number written as a string (``"5"``, ``" 7 "``, ``"5.0"``, ``"1e1"``).
_NUMERIC = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$", re.IGNORECASE)
_MAX_SAFE = 2**53 - 1


def refused(text: str) -> PydanticCustomError:
    return PydanticCustomError(TOOL_INPUT, "{text}", {"text": text})


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _whole(value: Any) -> int | None:
    """The whole number ``value`` stands for, or None when it is none (a fraction, a bool, a word)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if not _NUMERIC.match(text):
            return None
        value = float(text)
    if isinstance(value, int):
        return value if abs(value) <= _MAX_SAFE else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) <= _MAX_SAFE:
        return int(value)
    return None


def whole_number(name: str, *, least: int, high: int | None = None) -> BeforeValidator:
    """A count: absent when blank; a whole number >= ``least`` (1: positive, 0: non-negative), else refused
    with the release's text; above ``high`` it is ``high`` (the release clamps, it does not refuse)."""
    words = "a positive integer" if least >= 1 else "a non-negative integer"

    def read(value: Any) -> int | None:
        if _blank(value):
            return None
        number = _whole(value)
        if number is None or number < least:
            raise refused(f"{name} must be {words}")
        return number if high is None else min(number, high)

    return BeforeValidator(read)


def required_text(label: str) -> BeforeValidator:
    """A text the tool cannot go without: no string, or only blanks, is ``<label> required``."""

    def read(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise refused(f"{label} required")
        return value

    return BeforeValidator(read)


def _optional_text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()


# A text the tool may go without: anything but a string with something in it is absent.
optional_text = BeforeValidator(_optional_text)


def _number(value: Any) -> float | None:
    """A number, or a string starting with one (``"5abc"`` is 5, as ``parseFloat`` reads it); else absent."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        found = re.match(r"^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?", value, re.IGNORECASE)
        return float(found.group(0)) if found else None
    return None


# A number the tool reads leniently (a timeout): what is no number is absent.
lenient_number = BeforeValidator(_number)


def _js_truthy(value: Any) -> bool:
    """JavaScript's ``Boolean(value)``: an empty list or object is true, as any object is there."""
    if isinstance(value, list | dict):
        return True
    if isinstance(value, float) and math.isnan(value):
        return False
    return bool(value)


# A flag: anything truthy, as the release reads it.
truthy = BeforeValidator(_js_truthy)


def _string_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return None
    items = [item.strip() for item in value if isinstance(item, str) and item.strip()]
    return items or None


# A list of texts: one text is a list of one, what is no text is dropped, an empty list is none.
string_list = BeforeValidator(_string_list)


# Marks, in a field's schema, an argument ``required()`` made optional to pydantic only.
REQUIRED_MARK = "x-required"


def required() -> dict[str, Any]:
    """``Field`` settings of an argument whose validator must run even when it is missing, to refuse it
    in the release's words rather than pydantic's. Its published schema still says it is required
    (``list_required``)."""
    return {"default": None, "validate_default": True, "json_schema_extra": {REQUIRED_MARK: True}}


def list_required(schema: dict[str, Any]) -> None:
    """A model schema's marked arguments moved into its ``required`` list (a ``json_schema_extra`` hook)."""
    properties = schema.get("properties", {})
    marked = [name for name, prop in properties.items() if prop.pop(REQUIRED_MARK, False)]
    for prop in (properties[name] for name in marked):
        prop.pop("default", None)
    if marked:
        schema["required"] = [*schema.get("required", []), *marked]
