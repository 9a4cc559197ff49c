"""Thin tasks: parse ids, call ``shared``, enqueue what comes next. Arguments are ids; state is in Redis.

A sessions_send is the chain ``run -> reply_turn ... -> announce -> run -> deliver`` of linked tasks (one
Flower root, the flow); each task works out the flow's next step from what exists
(``shared.flows.decide``), so any of them may run twice, or be replaced by the reaper, without repeating a
turn or a delivery. What a task does is in ``workers.lanes`` and ``shared.flows.engine``, so the inline test
harness (``workers.testing``) runs the same code.

Log lines carry the ids a task was called with (``workers.signals`` binds them from the parameter names
``run_id``, ``flow_id``, ``session_key``); ``shared`` binds the run or flow it works on within a task.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task

from clawbus.shared.a2a import push
from clawbus.shared.config import MAX_DELIVERY_ATTEMPTS
from clawbus.shared.flows import archive
from clawbus.shared.flows.engine import perform
from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.runner.execution import Attempt
from clawbus.workers import lanes, queues, reaper
from clawbus.workers.services import worker_context

log = logging.getLogger(__name__)


@shared_task(name=queues.RUN_TASK, bind=True, max_retries=5, default_retry_delay=1)
def run(self: Task, run_id: str, session_key: str) -> str:
    """Execute one attempt of a run (and the runs queued behind it, while the lane budget lasts), then
    enqueue the lane's next head and the flow's next step."""
    ctx = worker_context()
    attempt = Attempt(run_id, session_key, owner=self.request.id or run_id, attempt=self.request.retries or 0)
    result, inline = lanes.execute_lane(ctx, attempt, ctx.config.runs.lane_budget_seconds)
    status = "suspended" if result.suspended else result.outcome.value
    # Flower shows the return value: a task that ran more of its lane says so.
    return f"{status} (+{inline} queued runs of the session)" if inline else status


def _step(task: Task, step: StepTask, flow_id: str) -> str:
    """A flow step: do what ``step`` performs (and, when its session is free, run the step's run here)."""
    owner = task.request.id or flow_id
    ctx = lanes.flow_context(worker_context(), owner, task.request.retries or 0)
    done = perform(ctx, step, flow_id, owner)
    if done.retry_in is not None:
        raise task.retry(countdown=done.retry_in)
    return type(done.action).__name__


@shared_task(name=queues.STEP_TASKS[StepTask.REPLY_TURN], bind=True, max_retries=5, default_retry_delay=1)
def reply_turn(self: Task, flow_id: str, turn: int) -> str:
    """Start reply-back turn ``turn``; if the loop is over, hand on to the announce step. (``turn`` is
    for Flower: what the turn is follows from the flow.)"""
    return _step(self, StepTask.REPLY_TURN, flow_id)


@shared_task(name=queues.STEP_TASKS[StepTask.ANNOUNCE], bind=True, max_retries=5, default_retry_delay=1)
def announce(self: Task, flow_id: str) -> str:
    """Start the announce run on the target session."""
    return _step(self, StepTask.ANNOUNCE, flow_id)


# Backoff retries end by themselves after delivery.maxAttempts (the delivery record counts them); the
# bound adds room for redeliveries after lost workers, and keeps one that kills every worker from looping.
@shared_task(name=queues.STEP_TASKS[StepTask.DELIVER], bind=True, max_retries=2 * MAX_DELIVERY_ATTEMPTS)
def deliver(self: Task, flow_id: str) -> str:
    """Create the announce's delivery (or record it skipped or blocked) and make one attempt; a retryable
    failure comes back after a backoff."""
    return _step(self, StepTask.DELIVER, flow_id)


@shared_task(name=queues.PUSH_TASK, bind=True, max_retries=2 * MAX_DELIVERY_ATTEMPTS)
def a2a_push(self: Task, run_id: str) -> str:
    """Send an ended A2A task's push notifications; a retryable failure comes back after a backoff (and
    the reaper sends what a lost worker did not)."""
    ctx = worker_context()
    outcome = push.deliver(ctx.store, ctx.config, run_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return f"delivered {outcome.delivered}, failed {outcome.failed}"


# The maintenance tasks send no events: Flower lists every task it hears of, and a reap every few seconds
# (720 an hour) would bury the runs there. Their senders send no task-sent event either (beat:
# workers.celery_app; a worker's reap on connect: workers.reaper).
# Beat's passes carry no expiry (a worker would judge it by its own clock, and one ahead of beat's would drop
# every pass): passes that queued up behind busy workers skip instead, but one each half interval.
@shared_task(name=queues.ARCHIVE_TASK, send_events=False)
def archive_sweep(now_ms: int | None = None) -> int:
    """Archive ended sub-agent sessions that are due (beat runs this), as of ``now_ms`` if given (a sweep
    asked for as of a time always runs: beat's never give one)."""
    ctx = worker_context()
    turn_ms = int(ctx.config.runs.archive_sweep_seconds * 500)
    if now_ms is None and not ctx.store.fleet.take_turn(queues.ARCHIVE_TASK, turn_ms):
        return 0
    return len(archive.sweep(ctx.config, ctx.store, now_ms))


@shared_task(name=queues.REAP_TASK, send_events=False)
def reap(on_connect: bool = False) -> int:
    """Re-dispatch stalled lanes and advance stalled flows (beat runs this every few seconds, a worker
    when its broker connection starts: that pass always runs); after a Redis restart or failover,
    everything at once."""
    ctx = worker_context()
    turn_ms = int(ctx.config.runs.reap_interval_seconds * 500)
    if not ctx.store.fleet.take_turn(queues.REAP_TASK, turn_ms) and not on_connect:
        return 0
    return reaper.reap(ctx)
