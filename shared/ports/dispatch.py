"""The port through which the domain enqueues work; ``workers.dispatch`` implements it with Celery."""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

from clawbus.shared.base.errors import Unavailable
from clawbus.shared.domain.runs import Enqueue, LaneHead


class StepTask(StrEnum):
    """The tasks that carry a flow forward, each performing some of the actions (``PERFORMS``)."""

    REPLY_TURN = "reply_turn"
    ANNOUNCE = "announce"
    DELIVER = "deliver"


class DispatchUnavailable(Unavailable):
    """The broker did not take a message, after the dispatcher's own retries: the work was not queued, or
    was and its confirmation was lost (a duplicate is harmless: every task claims before it acts). A run
    already accepted is queued again by the reaper (``shared.intake.submit.enqueue_accepted``)."""


class Dispatcher(Protocol):
    """Duplicates of anything enqueued here are harmless: runs are claimed, flow steps are idempotent."""

    def dispatch_run(self, head: LaneHead, delay_s: float = 0.0) -> None:
        """Enqueue the execution of a lane head (``delay_s`` later)."""

    def render_run(self, head: LaneHead) -> Enqueue | None:
        """The message ``dispatch_run`` would send, for the accept script to push itself; None if this
        dispatcher cannot render one (then the caller dispatches after accepting)."""

    def notify(self, run_id: str) -> None:
        """Enqueue the sending of an A2A task's push notifications (its run has ended)."""

    def step(self, task: StepTask, flow_id: str, turn: int | None = None) -> None:
        """Enqueue a step of a flow (``turn``: which reply-back turn, for a reply turn); the task may find
        the flow has moved on and hand on to the task that performs what comes next."""
