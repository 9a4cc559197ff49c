"""The reaper's pass: re-dispatch lane heads that stalled and advance flows past their due time, and watch
for runs that hold their lease but make no progress.

Beat asks for a pass every ``runs.reapIntervalSeconds``, and a worker asks for one whenever its broker
connection starts or comes back (``ReapOnConnect``). A pass that finds Redis is another server than the last
pass saw (a restart, or a failover to a replica) is a recovery pass: a queue message may have been lost
with the old server (taken by a worker but not yet recorded, or not yet written), so every lane head not
under a live lease is dispatched again and every flow in progress advanced, at once rather than after
``runs.dispatchGraceSeconds``. Duplicates are harmless: a claim refuses a run that is done or leased, and
flow steps are idempotent (docs/architecture.md, "Recovery after a Redis restart or failover").

The stall watchdog reports a run whose lease its worker keeps renewing but that wrote nothing (no event, no
memoized step) for ``runs.stallSeconds``: a worker alive but stuck (a model stream that neither sends nor
closes past every timeout, a tool blocked, a thread deadlocked). No lease lapses there, so nothing else would
notice. It is reported (one warning per stall, ``/metrics``, ``/v1/status``, the console), never stopped:
the run may yet go on, and cancelling it stays an operator's call (docs/architecture.md, "The stall
watchdog").
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from celery import Celery, bootsteps
from celery.utils import uuid

from clawbus.shared.a2a import push
from clawbus.shared.domain import logs
from clawbus.shared.flows import hot_window
from clawbus.shared.flows.engine import advance
from clawbus.workers import lanes, queues
from clawbus.workers.services import WorkerContext

log = logging.getLogger(__name__)

BATCH = 500
# A recovery pass looks at every lane and flow in one go (one script each; a few ms per thousand).
RECOVERY_BATCH = 1_000_000


def reap(ctx: WorkerContext) -> int:
    """One pass; returns how many lanes and flows it moved on."""
    recovering = ctx.store.fleet.server_changed()
    if recovering:
        log.warning(
            "Redis is another server than at the last reaper pass (restarted or failed over): "
            "dispatching every lane head not in progress and advancing every flow now"
        )
    limit = RECOVERY_BATCH if recovering else BATCH
    stalled = ctx.store.runs.reap(limit, everything=recovering)
    for head in stalled:
        with logs.bound(run_id=head.run_id, session_key=head.session_key, flow_id=head.flow_id):
            log.warning("re-dispatching run %s of %s: its lane stalled", head.run_id, head.session_key)
            ctx.dispatcher.dispatch_run(head)
    # A dead worker's places at the sub-agent gate free when their leases lapse: the runs waiting for them
    # go on now, not a dispatch grace later.
    for head in ctx.store.runs.reap_gate(ctx.config.agents.defaults.subagents.max_concurrent):
        ctx.dispatcher.dispatch_run(head)
    due = ctx.store.flows.reap(limit, everything=recovering)
    for flow_id in due:
        advance(lanes.flow_context(ctx), flow_id)
    # A2A tasks whose run ended without its notifications being sent (a worker lost at its end).
    pushed = push.sweep(ctx.store, ctx.dispatcher, limit)
    hot_window.sweep_idle(ctx.config, ctx.store, BATCH)
    watch_stalls(ctx)
    return len(stalled) + len(due) + pushed


def watch_stalls(ctx: WorkerContext) -> None:
    """Last in the pass: a failure here leaves the pass's dispatching done."""
    bound_s = ctx.config.runs.stall_seconds
    found = ctx.store.runs.watch_stalls(int(bound_s * 1000), BATCH)
    now = ctx.store.clock.now_ms()
    for run in found.fresh:
        with logs.bound(run_id=run.run_id, session_key=run.session_key):
            log.warning(
                "run %s of %s has made no progress for %.0f s while its lease is renewed "
                "(runs.stallSeconds %g; lease owner %s, attempt %d): reported, not stopped",
                run.run_id,
                run.session_key,
                (now - run.since) / 1000,
                bound_s,
                run.owner or "unknown",
                run.attempt,
            )


class ReapOnConnect(bootsteps.StartStopStep):
    """Asks for a reaper pass each time the worker's consumer starts, which it does again after its broker
    connection came back: after a Redis restart or failover the recovery pass then runs within moments of
    Redis answering, not at beat's next tick."""

    requires: ClassVar[set[str]] = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: Any) -> None:
        send_maintenance(parent.app, queues.REAP_TASK, {"on_connect": True})


def send_maintenance(app: Celery, name: str, kwargs: dict[str, Any] | None = None) -> None:
    """``send_task`` without the task-sent event, which would list the task in Flower (the maintenance
    tasks stay out of its list: ``workers.tasks``)."""
    message = app.amqp.create_task_message(
        uuid(), name, [], kwargs or {}, reply_to=app.thread_oid, ignore_result=True, create_sent_event=False
    )
    with app.producer_or_acquire() as producer:
        app.amqp.send_task_message(producer, name, message, queue=queues.MAINTENANCE)
