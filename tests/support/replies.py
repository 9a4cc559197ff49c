"""A script call whose reply was lost, for tests that a state-changing Lua script answers a repeat of itself
as it answered the first call (docs/architecture.md, "Reliability")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def reply_lost(call: Callable[..., Any], meanwhile: Callable[[], Any] | None = None) -> Callable[..., Any]:
    """``call`` as redis-py's retry makes it when the first reply was lost with its connection (Redis killed
    right after it ran): it runs, then runs again with the same arguments, and the caller sees the second
    answer. ``meanwhile`` is what another client does between the first call and its repeat (once)."""
    pending = [meanwhile] if meanwhile else []

    def twice(*args: Any, **kwargs: Any) -> Any:
        call(*args, **kwargs)
        while pending:
            pending.pop()()
        return call(*args, **kwargs)

    return twice
