"""What the storage port raises: its adapters translate their own failures (redis-py's, a cold store's) into
these, so a caller handles storage away the one way, whichever adapter is behind the port."""

from __future__ import annotations

from clawbus.shared.base.errors import ClawbusError, Unavailable


class StoreUnavailable(Unavailable):
    """The store cannot be reached, after its client's own retries (for Redis, ``shared.store.connection``):
    what the adapter raises in place of redis-py's ``ConnectionError`` and ``TimeoutError``. The call may or
    may not have taken effect; the API answers it with a 503 a client can retry."""


class StoreFull(StoreUnavailable):
    """The store refused a write for its memory (Redis's ``maxmemory`` reached under ``noeviction``): nothing
    of the refused command or script was written (a script that may write is refused before it starts).
    Reads go on; writes come back once memory is freed."""


class NotReplicated(StoreUnavailable):
    """A write reached the master but not the replicas ``redis.replicaAcks`` asks for, in time. It may
    still be kept (and its run may run): like a dropped connection, the caller cannot know."""


class ColdStoreUnavailable(ClawbusError):
    """The cold transcript store refused a read or a write (a full or read-only folder, an object store
    refusing or out of reach). Redis is untouched by it: a move that meets it leaves its messages hot and is
    tried again later (docs/architecture.md, "Hot and cold transcripts")."""
