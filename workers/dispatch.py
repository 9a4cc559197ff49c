"""Enqueueing by task name: what the API and the tasks use to start work, without importing task code.

Task ids are run ids (a run's dispatches, retries and reaper re-dispatches share one id, so Flower shows
a run as one task), and every task of a sessions_send exchange has the flow (the primary run) as its root.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from shared.store.runs import LaneHead
from workers import queues


class CeleryDispatcher:
    def __init__(self, app: Celery) -> None:
        self._app = app

    def dispatch_run(self, head: LaneHead) -> None:
        self._send(
            queues.RUN_TASK,
            [head.run_id, head.session_key],
            queues.queue_for(head.kind),
            task_id=head.run_id,
            root_id=head.flow_id or head.run_id,
        )

    def reply_turn(self, flow_id: str, turn: int) -> None:
        self._send(queues.REPLY_TURN_TASK, [flow_id, turn], queues.NESTED, root_id=flow_id)

    def announce(self, flow_id: str) -> None:
        self._send(queues.ANNOUNCE_TASK, [flow_id], queues.NESTED, root_id=flow_id)

    def deliver(self, flow_id: str) -> None:
        self._send(queues.DELIVER_TASK, [flow_id], queues.DELIVERY, root_id=flow_id)

    def spawn(self, head: LaneHead) -> None:
        """The child's run with its announce step as the callback: sent when the run's task returns.

        DESIGN names a chord; a chord over one task adds nothing but a group barrier, which makes the sending
        process (the API) subscribe to the header's result channel and keep it. A link is the same callback
        with no result-backend state. If it is lost (the run re-dispatched by the reaper), the reaper
        advances the flow instead.
        """
        flow_id = head.flow_id or head.run_id
        then = self._app.signature(
            queues.SUBAGENT_ANNOUNCE_TASK, args=[flow_id], queue=queues.NESTED, immutable=True
        )
        self._send(
            queues.RUN_TASK,
            [head.run_id, head.session_key],
            queues.SUBAGENT,
            task_id=head.run_id,
            root_id=flow_id,
            link=then,
        )

    def subagent_announce(self, flow_id: str) -> None:
        self._send(queues.SUBAGENT_ANNOUNCE_TASK, [flow_id], queues.NESTED, root_id=flow_id)

    def _send(self, name: str, args: list[Any], queue: str, **options: Any) -> None:
        # One batch: the message and its task-sent event (for Flower) go to Redis in one round trip.
        with self._app.producer_or_acquire() as producer, producer.batch():
            self._app.send_task(
                name, args=args, queue=queue, ignore_result=True, producer=producer, **options
            )
