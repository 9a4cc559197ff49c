"""The session tools as JSON schemas any model API takes, generated from their pydantic models.

Model APIs are stricter than JSON Schema: several reject ``$ref``, top-level ``anyOf``/``oneOf`` and
``integer`` (or treat it unevenly), so the schemas are flattened: references inlined, optional fields
given their plain type (leaving a field out is how a model says "none"), integers as ``number``, and the
spawn routing keys that exist only to be refused left out.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from clawbus.shared.tools.registry import TOOLS, Tool
from clawbus.shared.wire.list_schema import REFUSED_FILTERS
from clawbus.shared.wire.spawn_schema import REFUSED_OPTIONS

SchemaFormat = Literal["openai", "anthropic"]
FORMATS: tuple[SchemaFormat, ...] = ("openai", "anthropic")

# sessions_spawn accepts these only to answer "use sessions_send", or that clawbus cannot honour
# (docs/contract.md §6), and sessions_list the filters it cannot answer (§2); a model should not see them.
_HIDDEN = {
    "sessions_spawn": {"target", "channel", "to", "threadId", "replyTo", *REFUSED_OPTIONS},
    "sessions_list": set(REFUSED_FILTERS),
}


def parameters(tool: Tool) -> dict[str, Any]:
    """The tool's input schema. Shared between calls (generating one costs about a millisecond, on every
    model step): read it, do not change it."""
    return _parameters(tool.name)


@functools.cache
def _parameters(name: str) -> dict[str, Any]:
    tool = TOOLS[name]
    schema = tool.params.model_json_schema(by_alias=True)
    definitions = schema.pop("$defs", {})
    flat: dict[str, Any] = _flatten(schema, definitions)
    hidden = _HIDDEN.get(tool.name, set())
    properties = flat.get("properties", {}).items()
    flat["properties"] = {name: value for name, value in properties if name not in hidden}
    if "required" in flat:
        flat["required"] = [name for name in flat["required"] if name not in hidden]
    return flat


def tool_schema(tool: Tool, fmt: SchemaFormat) -> dict[str, Any]:
    if fmt == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": parameters(tool)}
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters(tool)},
    }


def tool_schemas(fmt: SchemaFormat, names: list[str] | None = None) -> list[dict[str, Any]]:
    """Every tool (or the ``names`` given, in that order) in one format."""
    chosen = [TOOLS[name] for name in names] if names is not None else list(TOOLS.values())
    return [tool_schema(tool, fmt) for tool in chosen]


def _flatten(node: Any, definitions: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_flatten(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = definitions[node["$ref"].rsplit("/", 1)[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _flatten(merged, definitions)
    variants = node.get("anyOf")
    if variants is not None:
        concrete = [variant for variant in variants if variant.get("type") != "null"]
        if len(concrete) == 1:
            rest = {k: v for k, v in node.items() if k != "anyOf"}
            return _flatten({**concrete[0], **rest}, definitions)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "default" and value is None:
            continue
        if key == "type" and value == "integer":
            out[key] = "number"
        elif key == "properties":
            out[key] = {name: _flatten(prop, definitions) for name, prop in value.items()}
        else:
            out[key] = _flatten(value, definitions)
    return out
