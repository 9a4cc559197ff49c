"""Durations and times as the release's commands read and write them: ``30m``, ``2h``, ``1h30m``, ``500``
(in a default unit) read; ``2h``, ``90m`` and ISO timestamps written."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from clawbus.shared.tools.status_card import js_round, time_ago

UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_SINGLE = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)?")
_SEGMENT = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
# The largest whole number a JavaScript number holds exactly (the release refuses durations past it).
_SAFE_INTEGER = 2**53 - 1


def parse_duration_ms(raw: str, default_unit: str) -> int:
    """``parseDurationMs``: one number with an optional unit (``default_unit`` without), or segments that
    each have one (``1h30m``). Raises ValueError for anything else."""
    text = raw.strip().lower()
    single = _SINGLE.fullmatch(text)
    if single:
        return _rounded(float(single[1]) * UNIT_MS[single[2] or default_unit])
    total, consumed = 0.0, 0
    for segment in _SEGMENT.finditer(text):
        if segment.start() != consumed:
            raise ValueError(f"invalid duration: {raw!r} (each segment needs a unit)")
        total += float(segment[1]) * UNIT_MS[segment[2]]
        consumed = segment.end()
    if consumed == 0 or consumed != len(text):
        raise ValueError(f"invalid duration: {raw!r}")
    return _rounded(total)


def _rounded(ms: float) -> int:
    whole = js_round(ms)
    if whole > _SAFE_INTEGER:
        raise ValueError("duration too long")
    return whole


def binding_duration(ms: int) -> str:
    """``formatThreadBindingDurationLabel``: ``disabled``, ``<1m``, whole hours as ``2h``, else minutes."""
    if ms <= 0:
        return "disabled"
    if ms < 60_000:
        return "<1m"
    minutes = ms // 60_000
    return f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"


def iso(ms: int) -> str:
    """``Date.prototype.toISOString``: ``2026-11-27T11:34:16.080Z``."""
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def stamped(at_ms: int | None, now_ms: int) -> str:
    """``2026-11-27T11:34:16.080Z (1m ago)``, or ``n/a`` (``formatTimestampWithAge``)."""
    if not at_ms or at_ms <= 0:
        return "n/a"
    # The release asks for ``n/a`` where the time is in the future (another process's clock ahead).
    since = now_ms - at_ms
    return f"{iso(at_ms)} ({time_ago(since) if since >= 0 else 'n/a'})"
