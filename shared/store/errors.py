"""Redis's own errors as the storage port's (``shared.ports.storage.errors``)."""

from __future__ import annotations

from redis.exceptions import OutOfMemoryError

from clawbus.shared.ports.storage import StoreFull


def out_of_memory(error: BaseException) -> StoreFull | None:
    """``error`` as the port's, if it is Redis's refusal for its memory."""
    if isinstance(error, OutOfMemoryError):
        return StoreFull(str(error))
    return None
