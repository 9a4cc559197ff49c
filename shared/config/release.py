"""What the pinned OpenClaw release accepts in a configuration file, and how it words a refusal.

The release's own JSON schema (``openclaw config schema`` of 2026.9.6, written by ``make openclaw-schema``)
ships beside this module, gzipped. It is the contract for the keys clawbus shares with OpenClaw: a file the
release validates is read, one it refuses is refused with the release's path and wording (``openclaw config
validate --json``: ``session.dmScope``, ``Invalid option: expected one of "main"|...``).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, validators
from jsonschema.exceptions import ValidationError

from clawbus.shared.base.js_values import js_type

RELEASE = "2026.9.6"
SCHEMA_FILE = Path(__file__).with_name(f"openclaw-{RELEASE}.schema.json.gz")

Schema = dict[str, Any]


@cache
def release_schema() -> Schema:
    schema: Schema = json.loads(gzip.decompress(SCHEMA_FILE.read_bytes()))
    return schema


def children(nodes: Sequence[Schema], key: str | int) -> list[Schema]:
    """The schemas a value under ``key`` may have, in any of ``nodes`` (their alternatives included);
    empty when none of them has such a key."""
    found: list[Schema] = []
    for node in alternatives(nodes):
        found.extend(_child(node, key))
    return found


def alternatives(nodes: Sequence[Schema]) -> Iterator[Schema]:
    for node in nodes:
        yield node
        for combinator in ("anyOf", "oneOf", "allOf"):
            yield from alternatives([alt for alt in node.get(combinator, ()) if isinstance(alt, dict)])


def _child(node: Schema, key: str | int) -> list[Schema]:
    if isinstance(key, int):
        items = node.get("items")
        return [items] if isinstance(items, dict) else []
    if key in node.get("properties", {}):
        return [node["properties"][key]]
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        return [extra]
    # ``additionalProperties: true`` (a plugin's channel, say): anything may be there.
    return [{}] if extra is True or (node.get("type") == "object" and "properties" not in node) else []


def _pattern(validator: Any, pattern: str, instance: Any, schema: Schema) -> Iterator[ValidationError]:
    """JavaScript's patterns, as far as Python's ``re`` reads them: one it cannot (``\\p{L}``, a Unicode
    property) refuses nothing, rather than what the release accepts."""
    try:
        matched = not isinstance(instance, str) or re.search(pattern, instance) is not None
    except re.error:
        return
    if not matched:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Validator = validators.extend(Draft7Validator, {"pattern": _pattern})  # type: ignore[no-untyped-call]


def release_issues(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Each ``(path, message)`` the release would refuse ``data`` for, worded as it words them."""
    validator = _Validator(release_schema())
    # An error under several alternatives (anyOf) is worded once.
    return list(dict.fromkeys(issue for error in validator.iter_errors(data) for issue in _worded(error)))


def dotted(path: Sequence[str | int]) -> str:
    """A path as the release prints it: ``models.providers.x.models.0.name``, ``<root>`` for the top."""
    return ".".join(str(part) for part in path) or "<root>"


def _zod(json_type: str) -> str:
    """zod says ``number`` of what JSON schema calls an integer."""
    return "number" if json_type == "integer" else json_type


def _worded(error: ValidationError) -> Iterator[tuple[str, str]]:
    path = list(error.absolute_path)
    if path and path[0] == "channels":
        # A channel's settings are its plugin's JSON schema, which the release checks with ajv.
        yield from _ajv(error, path)
        return
    # The error's schema and bound are the schema's own JSON (the types say they may be unset).
    check: Any = error.validator
    bound: Any = error.validator_value
    schema: Any = error.schema
    if "propertyNames" in error.schema_path and isinstance(error.instance, str):
        # The key itself is what failed: the release names the path down to it.
        yield dotted([*path, error.instance]), "Invalid key in record"
    elif check == "additionalProperties" and isinstance(error.instance, dict):
        extra = _extra_keys(error)
        yield dotted(path), f"{'Unrecognized keys' if ', ' in extra else 'Unrecognized key'}: {extra}"
    elif check == "required" and isinstance(error.instance, dict):
        for key in bound:
            if key not in error.instance:
                wanted = schema.get("properties", {}).get(key, {}).get("type", "value")
                yield dotted([*path, key]), f"Invalid input: expected {_zod(wanted)}, received undefined"
    elif check == "type" and "enum" in schema:
        return  # zod says only that the value is none of the options (the enum's error)
    elif check == "type":
        wanted = bound[0] if isinstance(bound, list) else bound
        yield dotted(path), f"Invalid input: expected {_zod(wanted)}, received {js_type(error.instance)}"
    elif check in ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"):
        yield dotted(path), _bound(check, bound)
    elif check == "enum":
        yield dotted(path), "Invalid option: expected one of " + "|".join(json.dumps(v) for v in bound)
    elif check == "const":
        yield dotted(path), f"Invalid input: expected {json.dumps(bound)}"
    elif check in ("anyOf", "oneOf"):
        allowed = [alt["const"] for alt in bound if isinstance(alt, dict) and "const" in alt]
        listed = ", ".join(json.dumps(v) for v in allowed)
        yield dotted(path), "Invalid input" + (f" (allowed: {listed})" if len(allowed) == len(bound) else "")
    elif check in ("minLength", "maxLength", "minItems", "maxItems"):
        size = "Too small" if check.startswith("min") else "Too big"
        unit = "characters" if check.endswith("Length") else "items"
        kind = "string" if check.endswith("Length") else "array"
        sign = ">=" if check.startswith("min") else "<="
        yield dotted(path), f"{size}: expected {kind} to have {sign}{bound} {unit}"
    elif check == "pattern":
        yield dotted(path), f"Invalid string: must match pattern /{bound}/"
    else:
        yield dotted(path), error.message


def _extra_keys(error: ValidationError) -> str:
    known: Any = error.schema
    given: Any = error.instance
    return ", ".join(f'"{key}"' for key in given if key not in known.get("properties", {}))


_AJV_COMBINATORS = {
    "anyOf": "must match a schema in anyOf",
    "oneOf": "must match exactly one schema in oneOf",
}
_AJV_BOUNDS = {"maximum": "<=", "exclusiveMaximum": "<", "minimum": ">=", "exclusiveMinimum": ">"}


def _ajv(error: ValidationError, path: list[str | int]) -> Iterator[tuple[str, str]]:
    check: Any = error.validator
    bound: Any = error.validator_value
    if check == "additionalProperties" and isinstance(error.instance, dict):
        message = f"must not have additional properties: {_extra_keys(error)}"
    elif check == "required" and isinstance(error.instance, dict):
        missing = [key for key in bound if key not in error.instance]
        message = f"must have required property '{missing[0]}'" if missing else error.message
    elif check == "enum":
        allowed = ", ".join(json.dumps(value) for value in bound)
        message = f"must be equal to one of the allowed values (allowed: {allowed})"
    elif check == "type":
        message = f"must be {bound if isinstance(bound, str) else ','.join(bound)}"
    elif check in _AJV_COMBINATORS:
        message = _AJV_COMBINATORS[check]
    elif check in _AJV_BOUNDS:
        message = f"must be {_AJV_BOUNDS[check]} {bound}"
    else:
        message = error.message
    yield dotted(path), f"invalid config: {message}"


def _bound(check: str, bound: Any) -> str:
    if check.endswith("aximum"):
        sign = "<" if check.startswith("exclusive") else "<="
        return f"Too big: expected number to be {sign}{bound} (maximum: {bound})"
    sign = ">" if check.startswith("exclusive") else ">="
    return f"Too small: expected number to be {sign}{bound} (minimum: {bound})"
