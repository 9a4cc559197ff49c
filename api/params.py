"""Request parameters more than one route takes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic import AfterValidator

_U64 = 2**64 - 1


def stream_id(value: str | None) -> str | None:
    """A Redis stream id: two unsigned 64-bit numbers (Redis refuses anything larger)."""
    if value is not None and any(int(part) > _U64 for part in value.split("-")):
        raise ValueError("not a stream id: each part must fit in 64 bits")
    return value


StreamId = Annotated[
    str | None,
    Query(pattern=r"^\d{1,20}-\d{1,20}$", description="Only messages after this id"),
    AfterValidator(stream_id),
]
