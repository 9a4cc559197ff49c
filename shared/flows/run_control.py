"""Stopping work (docs/contract.md §8): cancel one run wherever it is, a whole flow, or everything one
session has in its lane (the ``/stop`` command).

A queued or parked run ends ``aborted`` in the cancel itself (``shared.store.runs`` does it in one Lua
step), and what its end sets free is enqueued here: its lane's next run, the runs parked waiting for it,
its flow's next step. A running run is only marked and announced; the worker that holds it stops it
(``shared.runner.cancellation``) and its commit sets the rest free, as any run's end does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clawbus.shared.domain.runs import Cancelled, CancelOutcome
from clawbus.shared.domain.sessions import SessionPatch
from clawbus.shared.flows.engine import advance
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.flows.view import snapshot
from clawbus.shared.ports.context import Context

CANCELED: Literal["canceled"] = "canceled"


def cancel_run(ctx: Context, run_id: str, reason: str = "run aborted") -> Cancelled:
    cancelled = ctx.store.runs.cancel(run_id, reason)
    if cancelled.outcome is not CancelOutcome.ABORTED:
        return cancelled
    if cancelled.next_head is not None:
        ctx.dispatcher.dispatch_run(cancelled.next_head)
    for waiter in cancelled.waiters:
        ctx.dispatcher.dispatch_run(waiter)
    if cancelled.flow_id is not None:
        # Without this the reaper would move the flow on, a grace later: a sub-agent's report, the
        # announce of a send whose target was stopped.
        advance(FlowContext.within(ctx), cancelled.flow_id)
    return cancelled


@dataclass(frozen=True, slots=True)
class FlowCancelled:
    # False: the flow had already ended (its runs are left as they are).
    ended_here: bool
    # The flow's runs that were stopped: aborted at once, or being stopped by their worker.
    aborted: list[str]


def cancel_flow(ctx: Context, flow_id: str) -> FlowCancelled | None:
    """End the flow (``stopReason: canceled``) so no step starts after this, then stop the step that
    runs. None: there is no such flow."""
    fields = {"stopReason": CANCELED, "error": "the flow was cancelled"}
    if not ctx.store.flows.end(flow_id, CANCELED, fields):
        return (
            None
            if snapshot(ctx.store.flows, flow_id) is None
            else FlowCancelled(ended_here=False, aborted=[])
        )
    # Read after the end, so a run a step created as the flow ended is stopped too. (A step that read the
    # flow just before the end and creates its run after this read still runs that one run; its end then
    # finds the flow ended, and nothing follows it.)
    snap = snapshot(ctx.store.flows, flow_id)
    if snap is None:  # deleted meanwhile
        return FlowCancelled(ended_here=True, aborted=[])
    runs = [snap.primary, *snap.turns, snap.announce]
    aborted = [
        run.run_id
        for run in runs
        if run is not None
        and not run.status.terminal
        and cancel_run(ctx, run.run_id).outcome in (CancelOutcome.ABORTED, CancelOutcome.CANCELLING)
    ]
    return FlowCancelled(ended_here=True, aborted=aborted)


def kill_tree(ctx: Context, roots: list[str]) -> list[str]:
    """Stop sub-agent sessions and everything they spawned, to the last grandchild: each is marked
    ``killed`` first (a report reaching it is only recorded, and it spawns nothing more), then its running
    run is cancelled and its queued ones dropped. Each still reports once (``Status: killed``). Returns the
    sessions killed, the roots first."""
    store = ctx.store
    order: list[str] = []
    frontier = list(roots)
    while frontier:
        key = frontier.pop(0)
        if key in order:
            continue
        order.append(key)
        frontier += store.sessions.children(key)
    entries = [e for e in store.sessions.get_many(order) if e is not None and e.status == "running"]
    now = store.clock.now_ms()
    for entry in entries:
        store.sessions.patch(entry, SessionPatch({"status": "killed", "killedAt": now}))
    for entry in entries:
        stop_session(ctx, entry.key)
    # A killed session waits for no child: its report goes now (one that was yielding has no run to end).
    flow_context = FlowContext.within(ctx)
    for entry in entries:
        if entry.spawn_flow_id is not None:
            advance(flow_context, entry.spawn_flow_id)
    return [entry.key for entry in entries]


def cancel_cascading(ctx: Context, run_id: str) -> Cancelled:
    """Cancel a run; an orchestrator's run takes its whole tree with it (the orchestrator is killed)."""
    run = ctx.store.runs.get(run_id)
    session = ctx.store.sessions.get(run.session_key) if run is not None else None
    if session is not None and session.role == "orchestrator" and session.status == "running":
        kill_tree(ctx, [session.key])
    return cancel_run(ctx, run_id)


def stop_session(ctx: Context, session_key: str) -> list[str]:
    """Abort the session's running run and drop the runs queued behind it; the ids stopped, in lane
    order. The queued ones go first, from the back, so none of them is made the head (and enqueued) on
    the way."""
    stopped: list[str] = []
    for run_id in reversed(ctx.store.runs.lane(session_key)):
        outcome = cancel_run(ctx, run_id).outcome
        if outcome in (CancelOutcome.ABORTED, CancelOutcome.CANCELLING):
            stopped.append(run_id)
    return stopped[::-1]
