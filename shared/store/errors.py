"""What the store raises beyond redis-py's own errors."""

from __future__ import annotations

from redis.exceptions import OutOfMemoryError

from clawbus.shared.base.errors import ClawbusError


class StoreUnavailable(ClawbusError):
    """Redis cannot be reached, after redis-py's own retries (``shared.store.connection``): what the store's
    clients raise in place of redis-py's ``ConnectionError`` and ``TimeoutError``. The call may or may not
    have taken effect; the API answers it with a 503 a client can retry."""


class StoreFull(StoreUnavailable):
    """Redis refused a write for its memory (``maxmemory`` reached under ``noeviction``): nothing of the
    refused command or script was written (a script that may write is refused before it starts). Reads go
    on; writes come back once memory is freed."""


def out_of_memory(error: BaseException) -> StoreFull | None:
    """``error`` as the store's, if it is Redis's refusal for its memory."""
    if isinstance(error, OutOfMemoryError):
        return StoreFull(str(error))
    return None


class NotReplicated(StoreUnavailable):
    """A write reached the master but not the replicas ``redis.replicaAcks`` asks for, in time. It may
    still be kept (and its run may run): like a dropped connection, the caller cannot know."""
