"""The steps of a ``sessions_send`` exchange: a reply-back turn, the announce, its delivery."""

from __future__ import annotations

from clawbus.shared.base import session_keys
from clawbus.shared.base.contexts import ANNOUNCE_MESSAGE, announce_context, reply_context
from clawbus.shared.base.flow_ids import announce_run_id, turn_run_id
from clawbus.shared.domain import chains, policy
from clawbus.shared.domain.runs import inter_session_run
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.flows.decide import StartAnnounce, StartDelivery, StartTurn
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.flows.outbound import deliver_to
from clawbus.shared.ports.runtime import ANNOUNCE_SKIP
from clawbus.shared.wire.models import Flow, SessionEntry


def start_turn(ctx: FlowContext, flow: Flow, action: StartTurn) -> bool:
    """False if the speaking session's send policy refuses the turn (the loop stops there)."""
    requester, target = entries(ctx, flow)
    by_requester = action.turn % 2 == 1  # turn 1 is the requester's answer to the target's round-1 reply
    speaker, other = (requester, target) if by_requester else (target, requester)
    if policy.decide(ctx.config, speaker) == "deny":
        ctx.store.flows.update(flow.flow_id, {"blockedTurn": action.turn})
        return False
    now = ctx.store.clock.now_ms()
    run_id = turn_run_id(flow.flow_id, action.turn)
    context = reply_context(
        requester=by_requester,
        turn=action.turn,
        max_turns=flow.max_turns,
        requester_key=flow.requester_key,
        requester_channel=flow.requester_channel,
        target_key=flow.target_key,
        target_channel=flow.target_channel,
    )
    new = inter_session_run(
        speaker,
        "reply",
        action.input,
        run_id=run_id,
        now=now,
        # A turn's message names the other side as callers see it (the default agent's main: ``main``),
        # as the release records it.
        source_key=session_keys.display(
            other.key, default_agent=ctx.config.default_agent.id, main_key=ctx.config.session.main_key
        ),
        source_channel=flow.target_channel if by_requester else flow.requester_channel,
        source_tool="sessions_send",
        source_run_id=action.previous_run_id,
        context=context,
        flow_id=flow.flow_id,
        chain=chains.in_session(chains.of_flow(flow), speaker.key),
        turn=action.turn,
    )
    ctx.store.flows.update(
        flow.flow_id, {"turnsStarted": max(flow.turns_started, action.turn)}, due_in_ms=flow.step_timeout_ms
    )
    ctx.start(speaker, new)
    return True


def start_announce(ctx: FlowContext, flow: Flow, action: StartAnnounce) -> None:
    _requester, target = entries(ctx, flow)
    if policy.decide(ctx.config, target) == "deny":
        ctx.store.flows.end(
            flow.flow_id, "completed", {"stopReason": action.stop_reason, "deliveryStatus": "blocked"}
        )
        return
    now = ctx.store.clock.now_ms()
    run_id = announce_run_id(flow.flow_id)
    context = announce_context(
        requester_key=flow.requester_key,
        requester_channel=flow.requester_channel,
        target_key=flow.target_key,
        target_channel=flow.target_channel,
        original_request=flow.message,
        round_one_reply=action.round_one,
        latest_reply=action.latest,
    )
    new = inter_session_run(
        target,
        "announce",
        ANNOUNCE_MESSAGE,
        run_id=run_id,
        now=now,
        source_key=flow.requester_key,
        source_channel=flow.requester_channel,
        source_tool="sessions_send",
        context=context,
        flow_id=flow.flow_id,
        chain=chains.of_flow(flow),
    )
    ctx.store.flows.update(flow.flow_id, {"stopReason": action.stop_reason}, due_in_ms=flow.step_timeout_ms)
    ctx.start(target, new)


def start_delivery(ctx: FlowContext, flow: Flow, action: StartDelivery) -> None:
    """The announce reply goes to the target's channel, unless silent or refused by send policy."""
    text = action.text.strip()
    if not text or text == ANNOUNCE_SKIP:
        ctx.store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "skipped"})
        return
    _requester, target = entries(ctx, flow)
    deliver_to(ctx, flow, target, text)


def entries(ctx: FlowContext, flow: Flow) -> tuple[SessionEntry, SessionEntry]:
    now = ctx.store.clock.now_ms()
    requester, target = ctx.store.sessions.get_many([flow.requester_key, flow.target_key])
    return (
        requester or new_entry(ctx.config, flow.requester_key, now),
        target or new_entry(ctx.config, flow.target_key, now),
    )
