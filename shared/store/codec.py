"""Models <-> Redis hash fields.

Scalars are stored as plain strings (so Lua scripts can read ``status`` or compare ``token``), nested values
as JSON. Decoding keeps only the fields the model declares: hashes also hold internal bookkeeping (``runSeq``,
``memo``, ``stalled``, ``awaited``) that is not part of the public shape.
"""

from __future__ import annotations

import json
import types
import typing
from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)


def encode(model: BaseModel) -> dict[str, str]:
    return encode_values(model.model_dump(mode="json", by_alias=True, exclude_none=True))


def encode_values(values: dict[str, Any]) -> dict[str, str]:
    return {field: value if isinstance(value, str) else json.dumps(value) for field, value in values.items()}


def decode(cls: type[M], fields: dict[str, str]) -> M:
    nested = _json_fields(cls)
    known = _aliases(cls)
    data = {
        alias: json.loads(raw) if alias in nested else raw for alias, raw in fields.items() if alias in known
    }
    return cls.model_validate(data)


@cache
def _aliases(cls: type[BaseModel]) -> frozenset[str]:
    return frozenset(info.alias or name for name, info in cls.model_fields.items())


@cache
def _json_fields(cls: type[BaseModel]) -> frozenset[str]:
    return frozenset(
        info.alias or name for name, info in cls.model_fields.items() if _is_structured(info.annotation)
    )


def _is_structured(annotation: Any) -> bool:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return any(_is_structured(arg) for arg in typing.get_args(annotation) if arg is not type(None))
    origin = typing.get_origin(annotation)
    if origin in (list, dict, tuple):
        return True
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
