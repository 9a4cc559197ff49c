"""What a run task does, without Celery: one attempt of a run and what follows it, then the runs queued
behind it in its session while the lane budget lasts. ``workers.tasks`` and the inline test harness
(``workers.testing``) both call these, so the tests exercise the tasks' own code.
"""

from __future__ import annotations

import time

from clawbus.shared.domain.runs import ClaimOutcome, LaneHead
from clawbus.shared.flows.engine import advance, follow
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.runner.execution import Attempt, AttemptResult, execute
from clawbus.workers import queues
from clawbus.workers.services import WorkerContext


def run_and_follow(ctx: WorkerContext, attempt: Attempt) -> AttemptResult:
    """One attempt of a run, then the runs parked waiting for it and its flow's next step: a step that
    starts a run is done here, and its run executes here too when its session is free (no queue hop
    between the steps of an exchange or a spawn); so is a delivery to a channel inside clawbus, while one
    to an outside channel goes to its task. When the run's session has more runs waiting, the step goes
    to its task instead. A run task lost before it followed leaves the flow to the reaper, which advances
    it when it falls due."""
    result = execute(ctx, attempt)
    if result.outcome is ClaimOutcome.EARLY:  # a collect run still gathering: back when its window closes
        head = LaneHead(attempt.run_id, attempt.session_key, "collect")
        ctx.dispatcher.dispatch_run(head, delay_s=result.retry_in_ms / 1000)
        return result
    if result.suspended and result.retry_in_ms and result.kind is not None:
        # Parked for model capacity: back in its turn (the reaper resumes it if this message is lost).
        head = LaneHead(attempt.run_id, attempt.session_key, result.kind)
        ctx.dispatcher.dispatch_run(head, delay_s=result.retry_in_ms / 1000)
        return result
    for waiter in result.wake:
        ctx.dispatcher.dispatch_run(waiter)
    if result.flow_id is None:
        return result
    if ctx.follow_inline and result.next_head is None:
        follow(flow_context(ctx, attempt.owner, attempt.attempt), result.flow_id, attempt.owner)
    else:
        # More runs wait in this session: they go on first (here, while the lane budget lasts), and the
        # flow's next step goes to its task. Followed here, a step's run (a model call in another session)
        # held them up: under a backlog a busy requester's reply turns each waited for an announce, one at
        # a time (figure 8).
        advance(flow_context(ctx), result.flow_id)
    return result


def execute_lane(ctx: WorkerContext, attempt: Attempt, budget_s: float) -> tuple[AttemptResult, int]:
    """``attempt``, then the runs queued behind it in its session's lane, in this same task, for as long
    as ``budget_s`` allows; the lane's next head left over is enqueued. Returns the first attempt's result
    and how many queued runs ran with it.

    A queued successor costs a whole Celery message cycle when enqueued, and next to nothing when run
    here, where the session is already hot. The budget keeps one busy session from holding the slot:
    a slow run (a model call) uses it up at once. A successor runs as its own task would (owner = its
    run id), so a worker lost in the middle leaves it to the reaper like any other leased run.
    """
    started = time.monotonic()
    first = result = run_and_follow(ctx, attempt)
    inline = 0
    while (
        (head := result.next_head) is not None
        and time.monotonic() - started < budget_s
        and queues.queue_for(head.kind) == queues.queue_for(first.kind or head.kind)
    ):
        result = run_and_follow(ctx, Attempt(head.run_id, head.session_key, owner=head.run_id, attempt=0))
        inline += 1
    if result.next_head is not None:
        ctx.dispatcher.dispatch_run(result.next_head)
    return first, inline


def flow_context(ctx: WorkerContext, owner: str | None = None, attempt: int = 0) -> FlowContext:
    """With ``owner`` (a step task's id), the step's run is executed inside that task when its session is
    free: one queue hop saved per step."""
    if owner is None:
        return FlowContext(ctx.config, ctx.store, ctx.dispatcher)

    def run_inline(head: LaneHead) -> None:
        execute_lane(ctx, Attempt(head.run_id, head.session_key, owner=owner, attempt=attempt), 0.0)

    return FlowContext(ctx.config, ctx.store, ctx.dispatcher, run_inline)
