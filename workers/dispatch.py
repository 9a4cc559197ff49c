"""Enqueueing by task name: what the API and the tasks use to start work, without importing task code.

Task ids are run ids (a run's dispatches, retries and reaper re-dispatches share one id, so Flower shows
a run as one task), and every task of a sessions_send exchange has the flow (the primary run) as its root.

A publish that fails while Redis is away is sent again, with the backoff and as many times as the
process's Redis commands are retried (a worker rides out a restart or a failover): a batch whose delivery
kombu calls uncertain may so be sent twice, and a duplicate is harmless
(``shared.ports.dispatch.Dispatcher``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Celery
from kombu.exceptions import BatchPublishError, OperationalError

from clawbus.shared.domain.runs import Enqueue, LaneHead
from clawbus.shared.ports.dispatch import DispatchUnavailable, StepTask
from clawbus.shared.store.connection import RETRIES, RETRY_ON, Backoff
from clawbus.workers import queues
from clawbus.workers.messages import RunMessages

log = logging.getLogger(__name__)

# What a publish raises while Redis is away: a batch's uncertain delivery, kombu's give-up after its own
# retries, the errors the store's commands are retried on.
PUBLISH_FAILED = (BatchPublishError, OperationalError, *RETRY_ON)


class CeleryDispatcher:
    def __init__(self, app: Celery, retries: int = RETRIES) -> None:
        self._app = app
        self._messages = RunMessages(app)
        self._retries = retries
        self._backoff = Backoff()  # the store's delays between attempts

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
        for retry in range(1, self._retries + 2):
            try:
                # One batch: the message and its task-sent event (for Flower) go to Redis in one round trip.
                with self._app.producer_or_acquire() as producer, producer.batch():
                    self._app.send_task(
                        name, args=args, queue=queue, ignore_result=True, producer=producer, **options
                    )
                return
            except PUBLISH_FAILED as exc:
                if retry > self._retries:
                    # As the store's commands fail when Redis is away: the API answers it with a 503.
                    raise DispatchUnavailable(f"enqueue of {name} failed: {exc}") from exc
                log.warning("sending %s %s failed (%s); sending it again", name, args, exc)
                time.sleep(self._backoff.compute(retry))
