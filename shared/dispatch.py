"""The port through which the domain enqueues work; ``workers.dispatch`` implements it with Celery."""

from __future__ import annotations

from typing import Protocol

from shared.store.runs import LaneHead


class Dispatcher(Protocol):
    """Duplicates of anything enqueued here are harmless: runs are claimed, flow steps are idempotent."""

    def dispatch_run(self, head: LaneHead) -> None:
        """Enqueue the execution of a lane head."""

    def reply_turn(self, flow_id: str, turn: int) -> None:
        """Enqueue the flow's reply-back turn ``turn`` (which may find the loop over and hand on)."""

    def announce(self, flow_id: str) -> None:
        """Enqueue the flow's announce step."""

    def deliver(self, flow_id: str) -> None:
        """Enqueue the delivery of the flow's announce reply."""

    def spawn(self, head: LaneHead) -> None:
        """Enqueue a sub-agent's run with its announce step as the callback."""

    def subagent_announce(self, flow_id: str) -> None:
        """Enqueue a sub-agent flow's announce step."""
