"""A server-sent event stream as a comparable value: its events in order, each ``{event?, data}`` with the
data parsed as JSON where it is JSON, and consecutive text deltas joined into one event. How a text is cut
into deltas depends on timing (the gateway passes on what the model sent as it arrives), not on what either
side promises."""

from __future__ import annotations

import json
from typing import Any

# Fields that carry a piece of streamed text.
DELTA_KEYS = frozenset({"content", "delta"})


def parse(text: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    name: str | None = None
    data: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if data:
                events.append(_event(name, "\n".join(data)))
            name, data = None, []
        elif line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:") :].removeprefix(" "))
    return _joined(events)


def _event(name: str | None, data: str) -> dict[str, Any]:
    try:
        parsed: Any = json.loads(data)
    except ValueError:
        parsed = data
    return {"event": name, "data": parsed} if name else {"data": parsed}


def _joined(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for event in events:
        previous = out[-1] if out else None
        if previous is not None and _deltas(event) and _blanked(previous) == _blanked(event):
            out[-1] = _append(previous, event)
        else:
            out.append(event)
    return out


def _deltas(value: Any) -> bool:
    if isinstance(value, dict):
        return any((k in DELTA_KEYS and isinstance(v, str)) or _deltas(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_deltas(item) for item in value)
    return False


def _blanked(value: Any) -> Any:
    """``value`` with its text deltas emptied: two events alike but for those are one event, cut in two."""
    if isinstance(value, dict):
        return {k: "" if k in DELTA_KEYS and isinstance(v, str) else _blanked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blanked(item) for item in value]
    return value


def _append(first: Any, second: Any) -> Any:
    if isinstance(first, dict) and isinstance(second, dict):
        return {
            k: v + second[k] if k in DELTA_KEYS and isinstance(v, str) else _append(v, second[k])
            for k, v in first.items()
        }
    if isinstance(first, list) and isinstance(second, list):
        return [_append(a, b) for a, b in zip(first, second, strict=True)]
    return first
