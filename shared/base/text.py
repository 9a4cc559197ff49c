"""Rules for text that names things (session keys, labels, recipients, file names) and for tokens."""

from __future__ import annotations

import hashlib
import re

# C0, DEL and C1: no key, label or file name has a use for them, and a log line with one can lie. As a
# character class's body, for patterns that also exclude other characters (and for OpenAPI patterns).
CONTROL_CLASS = r"\x00-\x1f\x7f-\x9f"
CONTROL_CHARACTERS = re.compile(f"[{CONTROL_CLASS}]")


def has_control_characters(value: str) -> bool:
    return CONTROL_CHARACTERS.search(value) is not None


def token_digest(token: str) -> str:
    """How an API token is kept and compared: the hex SHA-256 of its text."""
    return hashlib.sha256(token.encode()).hexdigest()


def duration(ms: int) -> str:
    """A run's time as a status line shows it: ``45s``, ``2m5s``, ``1h3m``."""
    seconds = max(ms, 0) // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m"


def count(tokens: int) -> str:
    """A token count as a status line shows it: ``999``, ``1.2k``."""
    return str(tokens) if tokens < 1000 else f"{tokens / 1000:.1f}k"
