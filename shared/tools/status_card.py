"""The text of ``session_status``'s card (``statusText``), laid out line by line as OpenClaw 2026.9.6 lays
out its own (docs/contract.md §10), and the release's ways of writing numbers, durations and times, which
the ``subagents`` list shares.

Pure: the tool gathers the facts (``CardFacts``) from the store and configuration; this only writes them.
Sections are joined by a blank line, a section's lines by a newline, and a line with nothing to say is left
out, as in the release.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

# The window the release assumes for a model whose configuration gives none.
DEFAULT_CONTEXT_WINDOW = 200_000
RELEASE = "2026.9.6"

_UNITS_MS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


# --- the release's number and time formats -------------------------------------------------------------


def js_round(value: float) -> int:
    """``Math.round``: halves go up (Python's ``round`` goes to even)."""
    return math.floor(value + 0.5)


def fixed(value: float, digits: int) -> str:
    """``Number.prototype.toFixed``: the float's exact value rounded half up (Python's format rounds a tie
    to even: 1.25 -> ``1.2`` where the release writes ``1.3``)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def compact_count(tokens: float, *, precision: int, trim: bool = False) -> str:
    """``12``, ``1.5k``, ``128k``, ``2.0m``: thousands with ``precision`` decimals, millions with one."""
    if tokens < 1000:
        return str(js_round(tokens))

    def trimmed(text: str) -> str:
        return text.removesuffix(".0") if trim else text

    if tokens < 1_000_000:
        thousands = fixed(tokens / 1000, precision)
        if float(thousands) < 1000:
            return f"{trimmed(thousands)}k"
    return f"{trimmed(fixed(tokens / 1_000_000, 1))}m"


def token_count(value: int | None) -> str:
    """A count on the card (``formatTokenCount``): ``0`` when unknown, one decimal below 10k."""
    if value is None:
        return "0"
    safe = max(0, value)
    return compact_count(safe, precision=0 if safe >= 10_000 else 1)


def short_tokens(value: int | None) -> str | None:
    """A count in the sub-agent list (``formatTokenShort``): None when there is none, ``1k`` not ``1.0k``."""
    if not value or value <= 0:
        return None
    return compact_count(value, precision=0 if value >= 10_000 else 1, trim=True)


def compact_duration(ms: float | None, *, spaced: bool = False) -> str | None:
    """``416ms``, ``5s``, ``1m3s`` (``1m 3s`` spaced), ``2h``: the two largest units, to the second past
    one second; None for no positive duration."""
    if ms is None or not math.isfinite(ms) or ms <= 0:
        return None
    rounded = js_round(ms)
    if rounded < 1000:
        return f"{rounded}ms"
    rest = js_round(ms / 1000) * 1000
    parts = []
    for unit, size in _UNITS_MS:
        amount, rest = divmod(rest, size)
        if amount:
            parts.append(f"{amount}{unit}")
    return (" " if spaced else "").join(parts[:2])


def time_ago(ms: int) -> str:
    """``just now``, ``5m ago``, ``3h ago``, ``2d ago`` (``formatTimeAgo``)."""
    if ms < 0:
        return "unknown"
    minutes = js_round(js_round(ms / 1000) / 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes}m ago"
    hours = js_round(minutes / 60)
    if hours < 48:
        return f"{hours}h ago"
    return f"{js_round(hours / 24)}d ago"


def usd(value: float) -> str:
    """Cents from one cent up, four decimals below (``formatUsd``)."""
    return f"${fixed(value, 2 if value >= 0.01 else 4)}"


def _ordinal(day: int) -> str:
    if 11 <= day <= 13:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def clock_lines(now_ms: int) -> str:
    """``Current time: Friday, November 27th, 2026 - 8:25 AM (UTC)`` and its ``Reference UTC`` line.
    clawbus has no user time zone setting: both are UTC, the time on a 12-hour clock as the release's."""
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    hour = now.hour % 12 or 12
    meridiem = "AM" if now.hour < 12 else "PM"
    local = f"{now:%A}, {now:%B} {now.day}{_ordinal(now.day)}, {now.year} - {hour}:{now:%M} {meridiem}"
    return f"Current time: {local} (UTC)\nReference UTC: {now:%Y-%m-%d %H:%M} UTC"


# --- the card ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardFacts:
    """What the card says of one session, gathered by ``shared.tools.status``."""

    version: str
    now_ms: int
    session_key: str
    model_ref: str
    # The agent's configured model, and whether the session pinned another (``model`` set on the session).
    config_model_ref: str
    pinned: bool
    context_window: int
    thinking: str
    queue_mode: str
    queue_depth: int
    execution: str
    # ``process 17s · system 25m 17s``; None where it cannot be read.
    uptime: str | None = None
    auth: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    # The latest prompt's size: how full the context is.
    context_tokens: int | None = None
    # When the session began (None: it has no entry yet, so no duration) and was last active.
    started_at: int | None = None
    updated_at: int | None = None
    subagents_line: str | None = None
    tasks_line: str | None = None
    route: dict[str, Any] = field(default_factory=dict)
    # What the session's run waits for (``model capacity``): a line of its own, only then.
    waiting_for: str | None = None


def render(facts: CardFacts) -> str:
    sections: list[list[str | None]] = [
        [
            f"🦞 clawbus {facts.version} (OpenClaw {RELEASE} compatible)",
            clock_lines(facts.now_ms),
            _uptime(facts),
        ],
        [_model(facts), f"🔑 Auth: {facts.auth}" if facts.auth else None],
        [*_usage(facts), f"📚 Context: {_context(facts)}"],
        [
            f"🧵 Session: {_session(facts)}",
            f"⏳ Waiting for {facts.waiting_for}" if facts.waiting_for else None,
            facts.subagents_line,
            facts.tasks_line,
        ],
        [
            f"⚙️ Execution: {facts.execution}",
            "🤖 Runtime: clawbus",
            f"🎛️ Modes: think {facts.thinking} · fast off · elevated",
            f"🪢 Queue: {facts.queue_mode}"
            + (f" (depth {facts.queue_depth})" if facts.queue_depth > 0 else ""),
        ],
    ]
    text = "\n\n".join(filter(None, ("\n".join(line for line in lines if line) for lines in sections)))
    if facts.route:
        text += f"\n\nRoute context:\n```json\n{json.dumps(facts.route, indent=2, ensure_ascii=False)}\n```"
    return text


def _uptime(facts: CardFacts) -> str | None:
    return f"⏱️ Uptime: {facts.uptime}" if facts.uptime else None


def _model(facts: CardFacts) -> str:
    line = f"🧠 Model: {facts.model_ref}"
    if facts.pinned and facts.model_ref != facts.config_model_ref:
        line += f" · pinned session; config primary {facts.config_model_ref} · clear /model default"
    return line


def _usage(facts: CardFacts) -> list[str | None]:
    """Tokens and cost, once the session has any usage (the cost only when a price is known). Zero is
    none: clawbus counts 0 for runs with no model step (a report noted in the transcript)."""
    if not facts.input_tokens and not facts.output_tokens:
        return []

    def count(value: int | None) -> str:
        return "?" if value is None else token_count(value)

    tokens = f"🧮 Tokens: {count(facts.input_tokens)} in / {count(facts.output_tokens)} out"
    return [tokens, f"💵 Cost: {usd(facts.cost_usd)}" if facts.cost_usd is not None else None]


def _context(facts: CardFacts) -> str:
    """``?/128k`` before any prompt; ``10/128k (0%)`` after."""
    window = token_count(facts.context_window)
    used = facts.context_tokens
    if not used:
        return f"?/{window}"
    percent = min(999, js_round(used / facts.context_window * 100))
    return f"{token_count(used)}/{window} ({percent}%)"


def _session(facts: CardFacts) -> str:
    parts = [facts.session_key]
    lasted = compact_duration(facts.now_ms - facts.started_at, spaced=True) if facts.started_at else None
    if lasted:
        parts.append(f"duration {lasted}")
    parts.append(
        f"updated {time_ago(facts.now_ms - facts.updated_at)}" if facts.updated_at else "no activity"
    )
    return " • ".join(parts)
