"""A flow's message out: the delivery record of what a step posts to a session's route."""

from __future__ import annotations

from clawbus.shared.base.flow_ids import delivery_id
from clawbus.shared.domain import policy
from clawbus.shared.domain.sessions import route_of
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.wire.models import Delivery, Flow, SessionEntry


def deliver_to(ctx: FlowContext, flow: Flow, session: SessionEntry, text: str) -> None:
    """Create the flow's delivery of ``text`` to ``session``'s route (``sessions.route_of``), unless its
    send policy refuses that channel (the flow then ends ``blocked``)."""
    route = route_of(session)
    if policy.decide(ctx.config, session, channel=route.channel) == "deny":
        ctx.store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "blocked"})
        return
    now = ctx.store.clock.now_ms()
    delivery = Delivery(
        delivery_id=delivery_id(flow.flow_id),
        flow_id=flow.flow_id,
        session_key=session.key,
        channel=route.channel,
        to=route.to,
        account_id=route.account_id,
        thread_id=route.thread_id,
        text=text,
        status="pending",
        created_at=now,
        updated_at=now,
    )
    ctx.store.flows.create_delivery(delivery, due_in_ms=flow.step_timeout_ms)
