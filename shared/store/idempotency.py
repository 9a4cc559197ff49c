"""Idempotency keys in Redis: a key's first use, recorded in one command (``SET NX GET``), and the answer
that use gave."""

from __future__ import annotations

from redis import Redis

from clawbus.shared.domain.idempotency import Claimed, KeyReused, digest, seed_of
from clawbus.shared.store.keys import RedisKeys


class IdempotencyStore:
    def __init__(self, client: Redis, keys: RedisKeys) -> None:
        self._redis = client
        self._keys = keys

    def claim(self, principal: str, key: str, fingerprint: str, *, ttl_seconds: int, now_ms: int) -> Claimed:
        """The seed of the request's runs: this use's, or the first use's when the key was used before for
        the same request, with the answer that use gave if it gave one; ``KeyReused`` when it was used for
        another request. One round trip: the answer is read beside the claim."""
        name = self._keys.idempotency(principal, digest(key))
        pipe = self._redis.pipeline(transaction=False)
        pipe.set(name, f"{fingerprint}|{now_ms}", nx=True, ex=ttl_seconds, get=True)
        pipe.get(self._keys.idempotency_answer(principal, digest(key)))
        first, answer = pipe.execute()
        if first is None:
            return Claimed(seed_of(principal, key, now_ms), first=True)
        used_for, _, stamp = str(first).partition("|")
        if used_for != fingerprint:
            raise KeyReused(key)
        return Claimed(seed_of(principal, key, int(stamp)), None if answer is None else str(answer))

    def remember(self, principal: str, key: str, answer: str, *, ttl_seconds: int) -> None:
        """The request's answer, for its repeats; the first kept (a repeat that ran beside it has its own)."""
        name = self._keys.idempotency_answer(principal, digest(key))
        self._redis.set(name, answer, nx=True, ex=ttl_seconds)
