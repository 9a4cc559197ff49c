"""What JavaScript calls a JSON value: the release's error texts (zod's, ajv's) name a value by it."""

from __future__ import annotations

from typing import Any


def js_type(value: Any) -> str:
    """``typeof``, with arrays and null told apart as zod does."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
