"""Thin tasks: parse ids, call ``shared``, enqueue what comes next. Arguments are ids; state is in Redis.

A sessions_send is the chain ``run -> reply_turn ... -> announce -> run -> deliver`` of linked tasks (one
Flower root, the flow); each task works out the flow's next step from what exists (``shared.flows``), so
any of them may run twice, or be replaced by the reaper, without repeating a turn or a delivery.

Log lines carry the ids a task was called with (``workers.signals`` binds them from the parameter names
``run_id``, ``flow_id``, ``session_key``); ``shared`` binds the run or flow it works on within a task.
"""

from __future__ import annotations

import logging
import time

from celery import Task, shared_task

from shared import archive, deliveries, flows, logs
from shared.config import MAX_DELIVERY_ATTEMPTS
from shared.execution import Attempt, AttemptResult, execute
from shared.store.runs import LaneHead
from workers import queues
from workers.context import WorkerContext, worker_context

log = logging.getLogger(__name__)


def _flow_context(ctx: WorkerContext, task: Task | None = None) -> flows.FlowContext:
    """With ``task``, the step's run is executed inside that task when it may start at once."""
    if task is None:
        return flows.FlowContext(ctx.config, ctx.store, ctx.dispatcher)
    owner, attempt = task.request.id or "", task.request.retries or 0

    def run_inline(head: LaneHead) -> None:
        _execute_lane(ctx, Attempt(head.run_id, head.session_key, owner=owner, attempt=attempt), 0.0)

    return flows.FlowContext(ctx.config, ctx.store, ctx.dispatcher, run_inline)


def _execute(ctx: WorkerContext, attempt: Attempt) -> AttemptResult:
    """One attempt of a run, then the runs parked waiting for it and its flow's next step."""
    result = execute(ctx.store, ctx.config, ctx.dispatcher, attempt)
    for waiter in result.wake:
        ctx.dispatcher.dispatch_run(waiter)
    # A sub-agent's own run is followed by its link callback (subagent_announce), not from here; unless
    # it was parked on a wait: then the callback already ran, while the run was not over.
    if result.flow_id is not None and (result.kind != "subagent" or result.resumed):
        flows.advance(_flow_context(ctx), result.flow_id)
    return result


def _execute_lane(ctx: WorkerContext, attempt: Attempt, budget_s: float) -> tuple[AttemptResult, int]:
    """``attempt``, then the runs queued behind it in its session's lane, in this same task, for as long
    as ``budget_s`` allows; the lane's next head left over is enqueued.

    A queued successor costs a whole Celery message cycle when enqueued, and next to nothing when run
    here, where the session is already hot. The budget keeps one busy session from holding the slot:
    a slow run (a model call) uses it up at once. A successor runs as its own task would (owner = its
    run id), so a worker lost in the middle leaves it to the reaper like any other leased run.
    """
    started = time.monotonic()
    first = result = _execute(ctx, attempt)
    inline = 0
    while (
        (head := result.next_head) is not None
        and time.monotonic() - started < budget_s
        and head.kind != "subagent"  # its announce is the callback of its own task
        and queues.queue_for(head.kind) == queues.queue_for(first.kind or head.kind)
    ):
        result = _execute(ctx, Attempt(head.run_id, head.session_key, owner=head.run_id, attempt=0))
        inline += 1
    if result.next_head is not None:
        ctx.dispatcher.dispatch_run(result.next_head)
    return first, inline


@shared_task(name=queues.RUN_TASK, bind=True, max_retries=5, default_retry_delay=1)
def run(self: Task, run_id: str, session_key: str) -> str:
    """Execute one attempt of a run (and the runs queued behind it, while the lane budget lasts), then
    enqueue the lane's next head and the flow's next step."""
    ctx = worker_context()
    attempt = Attempt(run_id, session_key, owner=self.request.id or run_id, attempt=self.request.retries or 0)
    result, inline = _execute_lane(ctx, attempt, ctx.config.runs.lane_budget_seconds)
    status = "suspended" if result.suspended else result.outcome.value
    # Flower shows the return value: a task that ran more of its lane says so.
    return f"{status} (+{inline} queued runs of the session)" if inline else status


@shared_task(name=queues.REPLY_TURN_TASK, bind=True, max_retries=5, default_retry_delay=1)
def reply_turn(self: Task, flow_id: str, turn: int) -> str:
    """Start (and, if its session is free, run) reply-back turn ``turn``; if the loop is over, hand on to
    the announce step."""
    action = flows.advance(_flow_context(worker_context(), self), flow_id, performs=(flows.StartTurn,))
    return type(action).__name__


@shared_task(name=queues.ANNOUNCE_TASK, bind=True, max_retries=5, default_retry_delay=1)
def announce(self: Task, flow_id: str) -> str:
    """Start (and, if its session is free, run) the announce run on the target session."""
    action = flows.advance(_flow_context(worker_context(), self), flow_id, performs=(flows.StartAnnounce,))
    return type(action).__name__


@shared_task(name=queues.SUBAGENT_ANNOUNCE_TASK, bind=True, max_retries=5, default_retry_delay=1)
def subagent_announce(self: Task, flow_id: str) -> str:
    """The callback of a sub-agent's run task: ask the child for its report (Result / Notes)."""
    action = flows.advance(
        _flow_context(worker_context(), self), flow_id, performs=(flows.StartSubagentAnnounce,)
    )
    return type(action).__name__


@shared_task(name=queues.ARCHIVE_TASK)
def archive_sweep(now_ms: int | None = None) -> int:
    """Archive ended sub-agent sessions that are due (beat runs this), as of ``now_ms`` if given."""
    ctx = worker_context()
    return len(archive.sweep(ctx.config, ctx.store, now_ms))


# Backoff retries end by themselves after delivery.maxAttempts (the delivery record counts them); the
# bound adds room for redeliveries after lost workers, and keeps one that kills every worker from looping.
@shared_task(name=queues.DELIVER_TASK, bind=True, max_retries=2 * MAX_DELIVERY_ATTEMPTS)
def deliver(self: Task, flow_id: str) -> str:
    """Create the announce's delivery (or record it skipped or blocked) and make one attempt; a retryable
    failure comes back after a backoff."""
    ctx = worker_context()
    action = flows.advance(
        _flow_context(ctx),
        flow_id,
        performs=(flows.StartDelivery, flows.StartSubagentDelivery, flows.Deliver),
    )
    if not isinstance(action, flows.StartDelivery | flows.StartSubagentDelivery | flows.Deliver):
        return type(action).__name__
    outcome = deliveries.attempt(ctx.store, ctx.config, flow_id, owner=self.request.id or flow_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return "attempted"


@shared_task(name=queues.REAP_TASK)
def reap() -> int:
    """Re-dispatch stalled lanes and advance stalled flows (beat runs this every few seconds)."""
    ctx = worker_context()
    stalled = ctx.store.runs.reap()
    for head in stalled:
        with logs.bound(run_id=head.run_id, session_key=head.session_key, flow_id=head.flow_id):
            log.warning("re-dispatching run %s of %s: its lane stalled", head.run_id, head.session_key)
            ctx.dispatcher.dispatch_run(head)
    due = ctx.store.flows.reap()
    for flow_id in due:
        flows.advance(_flow_context(ctx), flow_id)
    return len(stalled) + len(due)
