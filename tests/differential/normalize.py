"""Answers made comparable: what differs from run to run on either side (ids, clocks, durations, state
folders) is replaced by a ``Masked`` value that keeps only its kind and its JSON type, so that two sides
compare equal where they agree and a number is still told from a string."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clawbus.shared.base.js_values import js_type

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
# Ids of the OpenAI shapes: the gateway's own (chatcmpl_<uuid>), the model's (chatcmpl-<hex>), responses'.
OPENAI_IDS = [
    (re.compile(r"\bchatcmpl[-_][A-Za-z0-9<>_-]+"), "<chatcmpl-id>"),
    (re.compile(r"\bresp_[A-Za-z0-9<>_-]+"), "<resp-id>"),
    (re.compile(r"\bmsg_[A-Za-z0-9<>_-]+"), "<msg-id>"),
]
# Lines of a status card that tell the time: the clock, and how long things have been up or idle.
CLOCK_LINES = [
    (re.compile(r"Current time: [^\n]*"), "Current time: <clock>"),
    (re.compile(r"Reference UTC: [^\n]*"), "Reference UTC: <clock>"),
    (re.compile(r"Uptime: [^\n]*"), "Uptime: <uptime>"),
    (re.compile(r"\bupdated (?:just now|(?:\d+[smhd] ?)+ago)"), "updated <age>"),
]
# A duration written out (``416ms``, ``6s``, ``1m 46s``) in a text that reports on runs.
DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:ms|s|m|h)\b(?: \d+(?:\.\d+)?(?:ms|s|m|h)\b)*")
DURATION_TEXT_KEYS = frozenset({"text", "statusText", "runtime"})

TIMESTAMP_KEYS = frozenset({"timestamp", "created", "created_at", "completed_at", "recordTimestampMs"})
DURATION_KEYS = frozenset({"runtimeMs", "durationMs", "elapsedMs", "runTimeMs", "latencyMs"})
# Values that identify a record of one run only: masked whole.
OPAQUE_KEYS = frozenset({"transcriptPosition", "responseId"})


@dataclass(frozen=True)
class Masked:
    """A value that differs from run to run: its kind (``timestamp``) and its JSON type."""

    kind: str
    json_type: str

    def __str__(self) -> str:
        return f"<{self.kind}>"


def json_type(value: Any) -> str:
    return value.json_type if isinstance(value, Masked) else js_type(value)


def normalize(value: Any, roots: Mapping[str, str]) -> Any:
    """``value`` with ids, clocks, durations and the folders in ``roots`` (path -> placeholder) masked."""
    return _value(value, None, roots)


def _value(value: Any, key: str | None, roots: Mapping[str, str]) -> Any:
    if key in OPAQUE_KEYS and value is not None:
        return Masked(key, json_type(value))
    if isinstance(value, dict):
        return {_text(k, None, roots): _value(v, k, roots) for k, v in value.items()}
    if isinstance(value, list):
        return [_value(item, key, roots) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value, key)
    if isinstance(value, str):
        return _text(value, key, roots)
    return value


def _number(value: float, key: str | None) -> Any:
    if key is None:
        return value
    if key in DURATION_KEYS:
        return Masked("duration", "number")
    # Epoch seconds or milliseconds, in a field that holds a moment.
    moment = key in TIMESTAMP_KEYS or key.endswith("At") or key.endswith("AtMs")
    if moment and (1e9 <= value < 1e10 or 1e12 <= value < 1e13):
        return Masked("timestamp", "number")
    return value


def _text(value: str, key: str | None, roots: Mapping[str, str]) -> str:
    # Longest first: a folder inside another is named by its own placeholder.
    for root in sorted(roots, key=len, reverse=True):
        value = value.replace(root, roots[root])
    value = UUID.sub("<uuid>", value)
    for pattern, replacement in OPENAI_IDS:
        value = pattern.sub(replacement, value)
    for pattern, replacement in CLOCK_LINES:
        value = pattern.sub(replacement, value)
    if key in DURATION_TEXT_KEYS:
        value = DURATION.sub("<duration>", value)
    return value
