"""Bounding what a tool hands back to a model (SPEC 3): redact, cut long texts, drop the oldest messages."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.redaction import redact

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


def fit(
    messages: list[dict[str, Any]], *, text_limit: int = TEXT_LIMIT, max_bytes: int = RESULT_BYTES
) -> Budgeted:
    """Messages are transcript dicts (oldest first) whose ``content`` blocks carry ``text``."""
    truncated = redacted = False
    cleaned: list[dict[str, Any]] = []
    for message in messages:
        blocks = []
        for block in message.get("content", []):
            text = block.get("text")
            if isinstance(text, str):
                text, was_redacted = redact(text)
                redacted |= was_redacted
                if len(text) > text_limit:
                    text = text[:text_limit] + TRUNCATION_MARK
                    truncated = True
                block = {**block, "text": text}
            blocks.append(block)
        cleaned.append({**message, "content": blocks})
    # Sized as sent: compact UTF-8 JSON, an array costing 2 bytes plus a comma between items.
    sizes = [len(json.dumps(m, ensure_ascii=False, separators=(",", ":")).encode()) for m in cleaned]
    total = 2 + sum(sizes) + max(len(sizes) - 1, 0)
    dropped = 0
    while cleaned and total > max_bytes:
        total -= sizes[dropped] + (1 if len(cleaned) > 1 else 0)
        cleaned.pop(0)
        dropped += 1
    return Budgeted(cleaned, dropped, truncated, redacted, total)
