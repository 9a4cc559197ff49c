"""Enqueueing by task name: what the API and the tasks use to start work, without importing task code.

Task ids are run ids (a run's dispatches, retries and reaper re-dispatches share one id, so Flower shows
a run as one task), and every task of a sessions_send exchange has the flow (the primary run) as its root.
"""

from __future__ import annotations

from typing import Any

from celery import Celery

from shared.dispatch import StepTask
from shared.runs import Enqueue, LaneHead
from workers import queues
from workers.messages import RunMessages


class CeleryDispatcher:
    def __init__(self, app: Celery) -> None:
        self._app = app
        self._messages = RunMessages(app)

    def render_run(self, head: LaneHead) -> Enqueue:
        return self._messages.render(head)

    def dispatch_run(self, head: LaneHead, delay_s: float = 0.0) -> None:
        self._send(
            queues.RUN_TASK,
            [head.run_id, head.session_key],
            queues.queue_for(head.kind),
            task_id=head.run_id,
            root_id=head.flow_id or head.run_id,
            **({"countdown": delay_s} if delay_s > 0 else {}),
        )

    def notify(self, run_id: str) -> None:
        self._send(queues.PUSH_TASK, [run_id], queues.DELIVERY)

    def step(self, task: StepTask, flow_id: str, turn: int | None = None) -> None:
        args: list[Any] = [flow_id] if turn is None else [flow_id, turn]
        self._send(queues.STEP_TASKS[task], args, queues.STEP_QUEUES[task], root_id=flow_id)

    def _send(self, name: str, args: list[Any], queue: str, **options: Any) -> None:
        # One batch: the message and its task-sent event (for Flower) go to Redis in one round trip.
        with self._app.producer_or_acquire() as producer, producer.batch():
            self._app.send_task(
                name, args=args, queue=queue, ignore_result=True, producer=producer, **options
            )
