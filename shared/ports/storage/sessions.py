"""The sessions: their entries, indexes and listing.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from clawbus.shared.domain.sessions import Departed, ReportRecorded, SessionPatch
from clawbus.shared.wire.models import (
    SessionEntry,
)


class Sessions(Protocol):
    """Session entries, their listings, and their id and label lookups."""

    def get(self, session_key: str) -> SessionEntry | None: ...

    def get_many(self, session_keys: Sequence[str]) -> list[SessionEntry | None]: ...

    def exists(self, session_key: str) -> bool: ...

    def key_for_session_id(self, session_id: str) -> str | None: ...

    def key_for_label(self, agent_id: str, label: str) -> str | None: ...

    def create(self, entry: SessionEntry) -> bool:
        """Create ``entry`` with its indexes unless the session exists; True if it was created."""

    def delete(self, entry: SessionEntry) -> None: ...

    def add_child(self, parent_key: str, child_key: str, *, awaited: bool = True) -> int:
        """Record a child of ``parent_key``, still to report unless not ``awaited`` (it owes no report);
        the children pending now."""

    def yield_children(self, session_key: str, run_id: str) -> tuple[int, int] | None:
        """``run_id`` makes the session wait for its pending children: (the yield's number, children
        pending), or None when none is pending."""

    def record_report(self, parent_key: str, flow_id: str, text: str) -> ReportRecorded | None:
        """A child's report reaches its spawner, applied once (None: the spawner is gone)."""

    def yield_reports(self, session_key: str) -> list[str]:
        """The reports that arrived since the session yielded, in order."""

    def end_wait(self, session_key: str, number: int) -> None:
        """The run that wakes the session from yield ``number`` was accepted: the wait is over."""

    def children(self, parent_key: str) -> list[str]: ...

    def children_of_many(self, parent_keys: Sequence[str]) -> list[list[str]]:
        """Each session's children (ever spawned), in one round trip."""

    def remember_departed(self, entry: SessionEntry, now_ms: int, shown_ms: int, kept_ms: int) -> None:
        """Keep, on the session that spawned ``entry``, what its ``subagents list`` shows of it once it is
        deleted (its entry and its newest runs' ids): its row for ``shown_ms`` from ``now_ms``, the record
        for ``kept_ms`` (at least as long); written before the deletion, again if it is repeated."""

    def departed(self, parent_key: str, now_ms: int) -> list[Departed]:
        """The deleted sub-agents the session still keeps at ``now_ms`` (``remember_departed``)."""

    def schedule_archive(self, session_key: str, at_ms: int) -> None: ...

    def take_due_archives(self, now_ms: int, limit: int = 200) -> list[str]: ...

    def archive(self, entry: SessionEntry, now_ms: int) -> bool:
        """Take the session out of the listings and free its label (False if it is gone)."""

    def patch(self, entry: SessionEntry, patch: SessionPatch) -> SessionEntry | None:
        """Apply a patch atomically; None if the session vanished. Raises LabelTaken."""

    def recent(
        self,
        *,
        agent_id: str | None = None,
        kinds: Sequence[str] | None = None,
        active_since: int | None = None,
        page: int = 100,
        archived: bool = False,
    ) -> Iterator[str]:
        """Keys of the listed sessions of ``agent_id`` (else of these ``kinds``, else all) updated since
        ``active_since`` (ms), newest first: read from the indexes, never a scan of the keyspace.
        ``archived``: the archived ones instead, newest archived first (the caller filters them)."""

    def idle(self, after_ms: int, before_ms: int, limit: int) -> list[tuple[str, int]]:
        """Listed sessions last updated after ``after_ms`` and before ``before_ms``, least recent first,
        with their updatedAt."""
