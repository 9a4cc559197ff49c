"""The sessions' transcripts, read back.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from clawbus.shared.wire.models import (
    Message,
)


class Transcripts(Protocol):
    """The sessions' transcripts, read back."""

    def last(
        self, session_key: str, count: int, keep: Callable[[Message], bool] | None = None, page: int = 200
    ) -> list[Message]:
        """The last ``count`` messages (those ``keep`` keeps), oldest first; pages backwards as needed, into
        the cold part when the hot one has too few."""

    def append(self, session_key: str, messages: Sequence[Message]) -> None:
        """Append messages as they are, before the session's first run (a forked child's inherited
        context)."""

    def first(self, session_key: str, count: int) -> list[Message]:
        """The first ``count`` messages, oldest first."""

    def tails(self, session_keys: Sequence[str], count: int) -> list[list[Message]]: ...

    def all(self, session_key: str) -> list[Message]: ...

    def length(self, session_key: str) -> int:
        """Messages in the whole transcript, hot and cold."""

    def hot_length(self, session_key: str) -> int:
        """Messages still in the hot part."""

    def move(self, session_key: str, agent_id: str, session_id: str, keep: int) -> int:
        """Move all but the newest ``keep`` hot messages to the cold part, in order, exactly once; how
        many moved (0 when another move of the session is running, or its moves are backed off after the
        cold store refused one). Raises ``ColdStoreUnavailable`` having trimmed nothing, counted the
        failure for the fleet and backed the session's moves off."""

    def idle_cursor(self) -> int:
        """The updatedAt (ms) up to which idle sessions were moved out."""

    def set_idle_cursor(self, updated_at_ms: int) -> None: ...

    def drop_cold(self, session_key: str) -> None:
        """Delete the session's cold part (the session is being deleted)."""
