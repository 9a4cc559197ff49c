"""What the store raises beyond redis-py's own errors."""

from __future__ import annotations

from shared.errors import ClawbusError


class NotReplicated(ClawbusError):
    """A write reached the master but not the replicas ``redis.replicaAcks`` asks for, in time. It may
    still be kept (and its run may run): like a dropped connection, the caller cannot know."""
