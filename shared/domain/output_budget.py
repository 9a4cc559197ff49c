"""Bounding what a tool hands back to a model (docs/contract.md §3): redact, cut long texts, drop the
oldest messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from clawbus.shared.domain.redaction import redact

TEXT_LIMIT = 4000
TRUNCATION_MARK = "\n…(truncated)…"
RESULT_BYTES = 80 * 1024


@dataclass(frozen=True, slots=True)
class Budgeted:
    messages: list[dict[str, Any]]
    dropped: int
    content_truncated: bool
    content_redacted: bool
    bytes: int


# What stands in for the newest message when it alone is larger than the whole budget.
TOO_LARGE = {"role": "assistant", "content": "[sessions_history omitted: message too large]"}


def fit(
    messages: list[dict[str, Any]], *, text_limit: int = TEXT_LIMIT, max_bytes: int = RESULT_BYTES
) -> Budgeted:
    """Messages are transcript dicts (oldest first): each cleaned (``clean``), then the oldest dropped
    until the whole fits ``max_bytes``; a newest message that alone does not fit leaves ``TOO_LARGE``."""
    cleaned, truncated, redacted = clean(messages, text_limit)
    # Sized as sent: compact UTF-8 JSON, an array costing 2 bytes plus a comma between items.
    sizes = [_size(m) for m in cleaned]
    total = 2 + sum(sizes) + max(len(sizes) - 1, 0)
    dropped = 0
    while cleaned and total > max_bytes:
        total -= sizes[dropped] + (1 if len(cleaned) > 1 else 0)
        cleaned.pop(0)
        dropped += 1
    if messages and not cleaned:
        cleaned = [dict(TOO_LARGE)]
        total = 2 + _size(TOO_LARGE)
    return Budgeted(cleaned, dropped, truncated, redacted, total)


def fit_around(messages: list[dict[str, Any]], anchor: int, *, max_bytes: int = RESULT_BYTES) -> Budgeted:
    """As ``fit``, but what is kept is the message at ``anchor`` and its neighbours, taken one older, one
    newer, in turn, while they fit (the release's window around a ``messageId``); an anchor that alone does
    not fit leaves ``TOO_LARGE``. An ``anchor`` outside the list (its message not shown) falls back to
    ``fit``."""
    if not 0 <= anchor < len(messages):
        return fit(messages, max_bytes=max_bytes)
    cleaned, truncated, redacted = clean(messages)
    sizes = [_size(m) for m in cleaned]
    start, end, total = anchor, anchor + 1, 2 + sizes[anchor]
    if total > max_bytes:
        return Budgeted([dict(TOO_LARGE)], len(messages), truncated, redacted, 2 + _size(TOO_LARGE))
    older, newer = start > 0, end < len(cleaned)
    while older or newer:
        if older and total + sizes[start - 1] + 1 <= max_bytes:
            start, total = start - 1, total + sizes[start - 1] + 1
        else:
            older = False
        older = older and start > 0
        if newer and total + sizes[end] + 1 <= max_bytes:
            end, total = end + 1, total + sizes[end] + 1
        else:
            newer = False
        newer = newer and end < len(cleaned)
    kept = cleaned[start:end]
    return Budgeted(kept, len(messages) - len(kept), truncated, redacted, total)


def shown(value: str, text_limit: int = TEXT_LIMIT) -> tuple[str, bool, bool]:
    """One text as a model or client reads it back: redacted, cut at ``text_limit`` characters; and whether
    it was redacted, and cut."""
    value, was_redacted = redact(value)
    if len(value) > text_limit:
        return value[:text_limit] + TRUNCATION_MARK, was_redacted, True
    return value, was_redacted, False


def clean(
    messages: list[dict[str, Any]], text_limit: int = TEXT_LIMIT
) -> tuple[list[dict[str, Any]], bool, bool]:
    """Every text a model or client reads back, redacted and cut at ``text_limit`` characters: text blocks
    and the arguments of tool calls alike. Returns the messages, and whether any text was cut or redacted."""
    changes = {"truncated": False, "redacted": False}

    def text(value: str) -> str:
        value, was_redacted, was_cut = shown(value, text_limit)
        changes["redacted"] |= was_redacted
        changes["truncated"] |= was_cut
        return value

    def value(item: Any) -> Any:
        if isinstance(item, str):
            return text(item)
        if isinstance(item, dict):
            return {key: value(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [value(inner) for inner in item]
        return item

    cleaned = []
    for message in messages:
        content = message.get("content", [])
        if isinstance(content, str):  # the release writes a person's message as its text
            cleaned.append({**message, "content": text(content)})
            continue
        blocks = []
        for block in content:
            if isinstance(block.get("text"), str):
                block = {**block, "text": text(block["text"])}
            if "arguments" in block:
                block = {**block, "arguments": value(block["arguments"])}
            blocks.append(block)
        cleaned.append({**message, "content": blocks})
    return cleaned, changes["truncated"], changes["redacted"]


def _size(message: dict[str, Any]) -> int:
    return len(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode())
