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
