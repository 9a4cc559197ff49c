"""Idempotency keys: a retried call answered with its first result.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.domain.idempotency import Claimed


class IdempotencyKeys(Protocol):
    """Idempotency keys' first uses (``shared.store.idempotency``)."""

    def claim(
        self, principal: str, key: str, fingerprint: str, *, ttl_seconds: int, now_ms: int
    ) -> Claimed: ...

    def remember(self, principal: str, key: str, answer: str, *, ttl_seconds: int) -> None: ...
