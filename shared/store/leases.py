"""A lease on one key, held for as long as a block runs: taken with ``SET NX PX``, renewed from a thread
every third of its time to live, released at the end. A holder that dies leaves it for at most one time to
live, so a short one (seconds) is enough however long the work takes (docs/architecture.md, "Hot and cold
transcripts")."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from redis import Redis

from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.scripts import Scripts


@contextmanager
def held_lease(redis: Redis, scripts: Scripts, key: str, ttl_ms: int) -> Iterator[bool]:
    """Yields whether the lease was taken; the block runs either way and should do nothing without it."""
    owner = uuid.uuid4().hex
    if not redis.set(key, owner, nx=True, px=ttl_ms):
        yield False
        return
    done = threading.Event()
    renewer = threading.Thread(
        target=_renew, args=(scripts, key, owner, ttl_ms, done), name=f"lease {key}", daemon=True
    )
    renewer.start()
    try:
        yield True
    finally:
        done.set()
        renewer.join()
        scripts.release_lease(keys=[key], args=[owner])


def _renew(scripts: Scripts, key: str, owner: str, ttl_ms: int, done: threading.Event) -> None:
    while not done.wait(ttl_ms / 3000):
        try:
            if not scripts.extend_lease(keys=[key], args=[owner, ttl_ms]):
                return  # lapsed and taken: the block's work is fenced by its own records, not by this
        except StoreUnavailable:
            continue  # Redis away: the lease may lapse meanwhile, and the next renewal says so
