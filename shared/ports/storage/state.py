"""The state log: session state changes, in order.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.domain.state_events import StateChanges


class StateLog(Protocol):
    """The sessions' state changes (docs/contract.md §10, "Change tracking"), read back; they are written
    by the steps that make them (``Runs.accept``, its commit and its cancel)."""

    def version(self, session_key: str) -> int:
        """The session's ``stateVersion``: how many changes it has recorded (0: none, or no session)."""

    def since(self, session_key: str, after: int, limit: int) -> StateChanges:
        """The version and the events kept after ``after``, the first ``limit`` of them, read at one
        instant."""

    def watch(self, watcher_key: str, target_key: str) -> bool:
        """``watcher_key`` hears of ``target_key``'s notifying changes after its version now (a watch already
        there is kept as it is); False when the target is gone."""

    def notices(self, watcher_key: str) -> dict[str, int]:
        """The session's pending notices: each watched session's key and the version to reconcile from."""
