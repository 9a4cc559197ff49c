"""A flow as it is read: everything its next step depends on, and the view ``GET /v1/flows/{id}`` gives."""

from __future__ import annotations

from typing import Literal

from clawbus.shared.base.flow_ids import announce_run_id, delivery_id, relay_run_id, turn_run_id
from clawbus.shared.flows.decide import MAX_TURNS
from clawbus.shared.ports.storage import Storage
from clawbus.shared.ports.storage.flows import Flows
from clawbus.shared.wire.models import Flow, FlowStep, Run, Snapshot


def snapshot(flows: Flows, flow_id: str) -> Snapshot | None:
    turn_ids = [turn_run_id(flow_id, t) for t in range(1, MAX_TURNS + 1)]
    return flows.snapshot(
        flow_id, turn_ids, announce_run_id(flow_id), delivery_id(flow_id), relay_run_id(flow_id)
    )


def describe(store: Storage, flow_id: str) -> Flow | None:
    """The flow as ``GET /v1/flows/{id}`` shows it: each step with its run, and the delivery."""
    snap = snapshot(store.flows, flow_id)
    if snap is None:
        return None
    steps = [_step("run", snap.primary)]
    steps += [
        _step("reply_turn", run, turn) for turn, run in enumerate(snap.turns[: snap.flow.turns_started], 1)
    ]
    if snap.announce:
        steps.append(_step("announce", snap.announce))
    if snap.relay:
        steps.append(_step("relay", snap.relay))
    if snap.delivery:
        steps.append(
            FlowStep(step="deliver", session_key=snap.delivery.session_key, status=snap.delivery.status)
        )
    trace_id = snap.primary.trace_id if snap.primary else None
    return snap.flow.model_copy(update={"steps": steps, "delivery": snap.delivery, "trace_id": trace_id})


def _step(
    kind: Literal["run", "reply_turn", "announce", "relay"],
    run: Run | None,
    turn: int | None = None,
) -> FlowStep:
    if run is None:
        return FlowStep(step=kind, turn=turn)
    return FlowStep(
        step=kind,
        turn=turn,
        run_id=run.run_id,
        session_key=run.session_key,
        status=run.status.value,
        reply=run.reply,
    )
