"""What the store raises beyond redis-py's own errors."""

from __future__ import annotations

from shared.base.errors import ClawbusError


class StoreUnavailable(ClawbusError):
    """Redis cannot be reached, after redis-py's own retries (``shared.store.connection``): what the store's
    clients raise in place of redis-py's ``ConnectionError`` and ``TimeoutError``. The call may or may not
    have taken effect; the API answers it with a 503 a client can retry."""


class NotReplicated(StoreUnavailable):
    """A write reached the master but not the replicas ``redis.replicaAcks`` asks for, in time. It may
    still be kept (and its run may run): like a dropped connection, the caller cannot know."""
