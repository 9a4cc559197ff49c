"""A chat message arriving from a channel: the session is created on first use and its agent runs."""

from __future__ import annotations

import dataclasses

from clawbus.shared.commands import Forward, is_command, run_command
from clawbus.shared.domain import chains, idempotency, policy, state_events
from clawbus.shared.domain.chains import Chain, ChainStopped
from clawbus.shared.domain.runs import new_run
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.flows import queueing
from clawbus.shared.flows.queueing import QueueOptions
from clawbus.shared.intake import threads
from clawbus.shared.intake.submit import AwaitRun, send_outcome, submit
from clawbus.shared.tools.tool_context import ToolContext, require_agent
from clawbus.shared.wire.models import (
    CommandReply,
    DeliveryContext,
    InboundMessageParams,
    Sampling,
    ToolFailure,
)
from clawbus.shared.wire.send_schema import SendResult


def receive(
    ctx: ToolContext,
    inbound: InboundMessageParams,
    context: str | None = None,
    *,
    commands: bool = True,
    sampling: Sampling | None = None,
    chain: Chain | None = None,
) -> SendResult | AwaitRun | ToolFailure | CommandReply:
    """``ctx.caller_key`` is the session the message is addressed to; a thread bound to a sub-agent hands it
    to that sub-agent's session (``shared.intake.threads``). ``context``: system text for this run only, kept
    out of the transcript (an OpenAI-compatible request's system messages). ``commands``: a chat command is
    run as one (not through the OpenAI-compatible endpoints, where the release hands every text to the model).
    ``sampling``: the token cap and sampling of this run's model calls (an OpenAI-compatible request's).
    ``chain``: the chain another host's message continues (an A2A message's metadata, an OpenAI-compatible
    request's header): the message is one hop of it, under its guards; without one it starts a chain.
    Raises ToolError for a key of an unknown agent."""
    require_agent(ctx.config, ctx.caller_key)
    addressed = ctx.caller_key
    session_key = threads.inbound_target(ctx.store, ctx.config, addressed)
    rerouted = session_key != addressed
    if rerouted:
        ctx = dataclasses.replace(ctx, caller_key=session_key)
    options = queueing.QueueOptions()
    if commands and is_command(inbound.message):
        handled = run_command(ctx, inbound, addressed)
        if not isinstance(handled, Forward):
            return handled
        inbound, options = _forwarded(inbound, handled)
    if inbound.message_id is not None and ctx.id_seed is None:
        ctx = dataclasses.replace(ctx, id_seed=idempotency.natural_seed(session_key, inbound.message_id))
    run_id = ctx.new_run_id()
    now = ctx.store.clock.now_ms()
    # The session and its lane in one round trip: the queue mode and the cap below are judged by both.
    existing, lane = ctx.store.runs.session_and_lane(session_key)
    seed = new_entry(ctx.config, session_key, now)
    seed = seed.model_copy(
        update={"channel": seed.channel or inbound.channel, "chat_type": seed.chat_type or inbound.chat_type}
    )
    route = DeliveryContext(channel=inbound.channel, to=inbound.to, account_id=inbound.account_id)
    # A message that says no channel (an operator's, from the console or the API) leaves the session's
    # route as it is: announces keep going where its chat is. So does one a thread binding handed over: the
    # bound session's route is its thread.
    updates = (
        {
            "lastChannel": inbound.channel,
            "lastTo": inbound.to,
            "lastAccountId": inbound.account_id,
            "deliveryContext": None if route.is_empty() else route.wire(),
        }
        if inbound.channel and not rerouted
        else {}
    )
    if inbound.display_name is not None:
        updates["displayName"] = inbound.display_name
    judged = existing or seed.model_copy(update={"last_channel": inbound.channel})
    if policy.decide(ctx.config, judged, channel=inbound.channel) == "deny":
        return ToolFailure(status="error", error=policy.BLOCKED, run_id=run_id)
    # Judged before the queue mode acts on the session (an interrupt, room made): a refused hop changes
    # nothing there.
    try:
        hop = chains.start(run_id, session_key) if chain is None else ctx.continue_chain(chain, session_key)
    except ChainStopped as stopped:
        return chains.refusal(stopped, run_id)
    # A busy session: the message's queue mode (docs/contract.md §11).
    mode = queueing.mode_for(ctx.config, existing, inbound.channel, inbound.queue_mode)
    held = queueing.limits(ctx.config, existing, options, inbound.channel)
    if mode == "interrupt":
        queueing.interrupt(ctx, session_key)
    room = queueing.make_room(ctx, session_key, mode, held, lane)
    if room.refused is not None:
        return ToolFailure(status="error", error=room.refused, run_id=run_id)
    text = inbound.message if room.summary is None else f"{room.summary}\n\n{inbound.message}"
    new = new_run(
        seed,
        queueing.kind_for(mode),
        text,
        run_id=run_id,
        now=now,
        context=context,
        sampling=sampling,
        **chains.fields(hop),
    )
    # A person's message to a spawned session is a change its spawner may want to know of.
    human = state_events.human_message(new.kind, inbound.channel, run_id)
    accepted = submit(
        ctx.store.runs,
        ctx.dispatcher,
        seed,
        updates,
        new,
        when_busy=queueing.when_busy(mode, held),
        state_event=human,
    )
    if accepted.busy_with is not None:
        return queueing.busy(ctx.display(session_key), accepted.busy_with)
    return send_outcome(
        accepted.folded_into or run_id,
        ctx.display(session_key),
        inbound.timeout_seconds,
        ctx.config.gateway.max_wait_seconds,
    )


def _forwarded(inbound: InboundMessageParams, command: Forward) -> tuple[InboundMessageParams, QueueOptions]:
    """The message a command goes on with (``/steer <message>``, a ``/queue`` directive's text), as the
    release goes on with a command's text, and the queue options it asked for."""
    mode = command.queue_mode or inbound.queue_mode
    return inbound.model_copy(update={"message": command.message, "queue_mode": mode}), command.options
