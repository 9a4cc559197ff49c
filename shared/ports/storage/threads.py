"""Chat threads bound to sub-agents.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Literal, Protocol

from clawbus.shared.wire.models import (
    ThreadBinding,
)


class ThreadBindings(Protocol):
    """Chat threads bound to sub-agents' sessions."""

    def get(self, channel: str, thread_id: str) -> ThreadBinding | None: ...

    def put(self, binding: ThreadBinding) -> None:
        """Store the binding whole (a new one replaces an older binding of the same thread)."""

    def touch(self, binding: ThreadBinding, now_ms: int) -> None:
        """A message went through the thread: its idle time starts again."""

    def set_limit(self, binding: ThreadBinding, name: Literal["idleTimeoutMs", "maxAgeMs"], ms: int) -> None:
        """Set one of the binding's own limits (0: never), over its channel's, leaving the rest of the
        binding as it is now (a release meanwhile stays)."""

    def release(self, binding: ThreadBinding, now_ms: int) -> None: ...
