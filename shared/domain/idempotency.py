"""Idempotency keys (docs/architecture.md, "Idempotency"): a request that creates work, sent again with the
same key (a client retrying through a lost answer), makes nothing new. The key's first use is recorded with
the request's fingerprint and a stamp; the runs the request makes get ids derived from key and stamp (the
same ids the tools already derive for a model's repeated call), so the accept script, which never queues a
run id twice, is what makes a repeat harmless: there is no moment where a run exists without its key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from clawbus.shared.base.errors import ClawbusError

# The header's name, and the longest key taken.
HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255


class KeyReused(ClawbusError):
    """The key was first used for another request."""


@dataclass(frozen=True, slots=True)
class Claimed:
    """The seed of the runs a request with this key makes (the same for every repeat within the TTL), and
    the answer its first use gave, once it gave one. ``first``: this is the key's first use, so no run
    derived from the seed exists yet."""

    seed: str
    answer: str | None = None
    first: bool = False


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def fingerprint(method: str, route: str, body: Any, principal: str) -> str:
    """What makes two requests the same request: method, route, body (as JSON, keys sorted) and principal."""
    text = json.dumps([method.upper(), route, body, principal], sort_keys=True, separators=(",", ":"))
    return digest(text)


def seed_of(principal: str, key: str, stamp: int) -> str:
    return f"idempotency:{principal}:{digest(key)}:{stamp}"


def natural_seed(session_key: str, message_id: str) -> str:
    """A chat platform's own message id: a redelivered message is the same message, whoever sends it."""
    return f"message:{session_key}:{digest(message_id)}"
