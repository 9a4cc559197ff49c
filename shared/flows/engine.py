"""Moving a flow on: what comes next, done here or handed to the task that does it, and how it ends.

``advance`` asks ``decide.next_action`` what comes next and does it if the calling task performs that action
(``decide.PERFORMS``), else enqueues the task that does. Every step's run, note and delivery has an id derived
from the flow's (``ids``), so a step that runs twice changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from clawbus.shared.adapters import channels
from clawbus.shared.base import trace_context
from clawbus.shared.base.flow_ids import delivery_id
from clawbus.shared.domain import logs
from clawbus.shared.flows import deliveries
from clawbus.shared.flows.decide import (
    PERFORMS,
    RUN_FOLLOWS,
    Action,
    DeliverRelay,
    Finish,
    SettleQuietly,
    StartAnnounce,
    StartDelivery,
    StartSubagentDelivery,
    StartTurn,
    Wait,
    next_action,
    task_for,
)
from clawbus.shared.flows.exchange import start_announce, start_delivery, start_turn
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.flows.report import (
    deliver_relay,
    settle_quietly,
    start_subagent_delivery,
)
from clawbus.shared.flows.view import snapshot
from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.wire.models import Flow, Snapshot

log = logging.getLogger(__name__)


def advance(ctx: FlowContext, flow_id: str, task: StepTask | None = None) -> Action:
    """Work out the flow's next step; do it if ``task`` performs it, else enqueue the task that does.

    Finishing is always done here (it is one write). Returns the action, for the caller to act on a
    ``Deliver``.
    """
    with logs.bound(flow_id=flow_id):
        return _advance(ctx, flow_id, PERFORMS[task] if task else ())


def follow(ctx: FlowContext, flow_id: str, owner: str) -> Action:
    """What a run task (``owner``) does after its run: the flow's next step when it starts a run or
    creates the delivery (``RUN_FOLLOWS``), else hand it to the task that performs it, as ``advance``
    does. A pending delivery is attempted here when its channel is inside clawbus, else handed to the
    delivery task."""
    with logs.bound(flow_id=flow_id):
        action = _advance(ctx, flow_id, RUN_FOLLOWS)
        if isinstance(action, PERFORMS[StepTask.DELIVER]):
            _deliver_or_hand_over(ctx, flow_id, owner)
        return action


def _deliver_or_hand_over(ctx: FlowContext, flow_id: str, owner: str) -> None:
    delivery = ctx.store.flows.get_delivery(delivery_id(flow_id))
    if delivery is None or delivery.status != "pending":  # skipped or blocked: the flow has ended
        return
    local = channels.is_local(ctx.config, delivery.channel)
    if local and deliveries.attempt(ctx.store, ctx.config, flow_id, owner=owner).retry_in is None:
        return
    # An outside channel, or a local attempt that asks for a retry: the delivery task owns the backoff.
    ctx.dispatcher.step(StepTask.DELIVER, flow_id)


@dataclass(frozen=True, slots=True)
class StepDone:
    action: Action
    # Seconds until the delivery is tried again, when an attempt failed in a way a retry may fix.
    retry_in: float | None = None


def perform(ctx: FlowContext, task: StepTask, flow_id: str, owner: str) -> StepDone:
    """What a step task does: advance the flow as ``task``; the delivery task then makes one attempt."""
    action = advance(ctx, flow_id, task)
    if task is StepTask.DELIVER and isinstance(action, PERFORMS[task]):
        return StepDone(action, deliveries.attempt(ctx.store, ctx.config, flow_id, owner=owner).retry_in)
    return StepDone(action)


def _advance(ctx: FlowContext, flow_id: str, performs: tuple[type[Action], ...]) -> Action:
    snap = snapshot(ctx.store.flows, flow_id)
    if snap is None:
        return Finish("gone", "the flow is gone")
    # The runs a step starts belong to the trace of the flow's primary run (the send or the spawn).
    with trace_context.continued(snap.primary.trace_parent if snap.primary else None):
        return _step(ctx, flow_id, performs, snap)


def _step(ctx: FlowContext, flow_id: str, performs: tuple[type[Action], ...], snap: Snapshot) -> Action:
    action = next_action(snap, ctx.store.clock.now_ms())
    if isinstance(action, Finish):
        _end(ctx, snap.flow, action)
        return action
    if isinstance(action, Wait):
        if action.until is not None:
            ctx.store.flows.recheck(flow_id, action.until)
        return action
    if not isinstance(action, performs):
        _hand_over(ctx, snap.flow, action)
        return action
    if isinstance(action, StartTurn):
        if not start_turn(ctx, snap.flow, action):
            return _advance(ctx, flow_id, performs)  # the turn was blocked: what comes after it
    elif isinstance(action, StartAnnounce):
        start_announce(ctx, snap.flow, action)
    elif isinstance(action, StartDelivery):
        start_delivery(ctx, snap.flow, action)
    elif isinstance(action, SettleQuietly):
        settle_quietly(ctx, snap)
    elif isinstance(action, StartSubagentDelivery):
        start_subagent_delivery(ctx, snap)
    elif isinstance(action, DeliverRelay):
        deliver_relay(ctx, snap, action)
    return action


def _end(ctx: FlowContext, flow: Flow, finish: Finish) -> None:
    """Every end is counted by reason; one off the normal path is also recorded on the flow (stopReason,
    error) and logged, never silent."""
    early = finish.reason != "completed"
    fields = {"stopReason": finish.reason, "error": finish.error} if early else {}
    if ctx.store.flows.end(flow.flow_id, finish.reason, fields) and early:
        log.warning("flow %s ended early (%s): %s", flow.flow_id, finish.reason, finish.error)


def _hand_over(ctx: FlowContext, flow: Flow, action: Action) -> None:
    task = task_for(action)
    if task is not None:
        ctx.dispatcher.step(task, flow.flow_id, action.turn if isinstance(action, StartTurn) else None)
