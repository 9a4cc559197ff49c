"""sessions_send (docs/contract.md §4): message another session; fire-and-forget, or wait for its reply."""

from __future__ import annotations

from clawbus.shared.adapters.runtimes import remote
from clawbus.shared.base import session_keys
from clawbus.shared.base.contexts import send_context
from clawbus.shared.base.errors import ToolError
from clawbus.shared.domain import chains, policy, state_events, visibility
from clawbus.shared.domain.chains import ChainStopped
from clawbus.shared.domain.runs import WhenBusy, inter_session_run
from clawbus.shared.domain.sessions import channel_of, new_entry
from clawbus.shared.flows import queueing
from clawbus.shared.flows.create import new_flow
from clawbus.shared.intake.submit import AwaitRun, send_outcome, submit
from clawbus.shared.tools import send_modes
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.tools.tool_context import looks_like_key as session_keys_like
from clawbus.shared.wire.models import ToolFailure
from clawbus.shared.wire.send_schema import NotifyResult, SendResult, SessionsSendParams


def sessions_send(
    ctx: ToolContext, params: SessionsSendParams
) -> SendResult | NotifyResult | ToolFailure | AwaitRun:
    run_id = ctx.new_run_id()
    if params.session_key and params.label:
        return ToolFailure(
            status="error", error="Provide either sessionKey or label (not both).", run_id=run_id
        )
    if not params.session_key and not params.label and not params.agent_id:
        return ToolFailure(status="error", error="Either sessionKey or label is required", run_id=run_id)
    if params.mode == "resume":
        return ToolFailure(
            status="forbidden", error="Task resume requires an admitted parent tool caller.", run_id=run_id
        )
    # ``a2a:<remoteId>`` of a configured remote is the caller agent's own session with that agent.
    remote_key = remote.target_key(ctx.config, ctx.caller_agent, params.session_key or "")
    # The release names the target in a refusal that concerns a key.
    named = params.session_key.strip() if params.session_key else None
    try:
        if remote_key:
            target = remote_key
        elif params.session_key:
            target = ctx.resolve(params.session_key)
        else:
            target = _by_label(ctx, params) if params.label else _main_of(ctx, params.agent_id or "")
    except ToolError as exc:
        return ToolFailure(
            status="error" if exc.status == "error" else "forbidden",
            error=exc.error,
            run_id=run_id,
            session_key=named if named and session_keys_like(named) else None,
        )
    if named is not None and named != "main" and target == ctx.caller_key and send_modes.waits(params):
        return ToolFailure(
            status="error",
            error="sessions_send cannot target the calling session; use your own reply instead",
            run_id=run_id,
            session_key=target,
        )
    if session_keys.in_thread(target):
        return send_modes.thread_refusal(ctx.new_run_id(), named or target)
    caller, existing = ctx.store.sessions.get_many([ctx.caller_key, target])
    # Visibility first: a session the caller may not see is refused whether or not it exists, so a refusal
    # never tells which sessions exist.
    refused = None if remote_key else visibility.refusal(ctx.config, ctx.caller_key, target, existing, "send")
    if refused is not None:
        return ToolFailure(status="forbidden", error=refused, run_id=run_id)
    # A send opens no session, as in the release (an agent's main session is always there): sessions come
    # from chat, spawns, and PUT /v1/sessions/{key}.
    if existing is None and not remote_key and target != ctx.main_key_of(target):
        reference = named or target
        return ToolFailure(
            status="error",
            error=ctx.missing_session(reference, target),
            run_id=run_id,
            session_key=target if session_keys_like(reference) else None,
        )
    # Named as the caller named it when that was ``main``, else by its key, as the release echoes it.
    shown = "main" if named == "main" else target
    if existing is None and params.mode in send_modes.ON_EXISTING:
        return send_modes.missing_refusal(run_id, shown)
    now = ctx.store.clock.now_ms()
    entry = existing or new_entry(ctx.config, target, now)
    if remote_key and entry.model is None:
        entry = entry.model_copy(update={"model": remote.model_ref(remote_key)})
    if policy.decide(ctx.config, entry) == "deny":
        return ToolFailure(status="error", error=policy.BLOCKED, run_id=run_id)
    try:
        chain = ctx.next_hop(run_id, target)
    except ChainStopped as stopped:
        return chains.refusal(stopped, run_id)
    caller_channel = channel_of(caller, ctx.caller_key, ctx.config.session.main_key)
    if params.mode in send_modes.ON_EXISTING:
        sent = send_modes.Sent(run_id, now, chain, caller_channel, shown)
        return send_modes.deliver(ctx, params, entry, sent)
    new = inter_session_run(
        entry,
        "send",
        params.message,
        run_id=run_id,
        now=now,
        source_key=ctx.caller_key,
        source_channel=caller_channel,
        source_tool="sessions_send",
        source_run_id=ctx.origin_run_id,
        context=send_context(
            requester_key=ctx.caller_key, requester_channel=caller_channel, target_key=target
        ),
        flow_id=run_id,
        chain=chain,
    )
    flow = new_flow(
        ctx.config,
        run_id=run_id,
        requester_key=ctx.caller_key,
        requester=caller,
        target_key=target,
        target=existing,
        message=params.message,
        timeout_seconds=params.wait_seconds,
        chain=chain,
        now=now,
        # The release runs the reply-back turns of a send to ``main`` from ``main`` (by its alias it is
        # another session to its self-check), the agent answering itself until one says REPLY_SKIP.
        loop_to_self=named == "main",
    )
    # A busy target: the send's own queue mode (docs/contract.md §11); it never waits to be steered in.
    if params.queue_mode == "interrupt":
        queueing.interrupt(ctx, target)
    when_busy = WhenBusy("reject") if params.queue_mode == "reject" else None
    window = ctx.chain_window()
    accepted = submit(
        ctx.store.runs, ctx.dispatcher, entry, {}, new, flow, when_busy=when_busy, window=window
    )
    if accepted.chain_full and window is not None:
        return chains.refusal(chains.over_window(chain, window), run_id)
    if accepted.busy_with is not None:
        return queueing.busy(shown, accepted.busy_with)
    return send_outcome(
        run_id,
        shown,
        params.wait_seconds,
        ctx.config.gateway.max_wait_seconds,
        flow_id=run_id,
        watched=_watch(ctx, params, target),
    )


def _watch(ctx: ToolContext, params: SessionsSendParams, target: str) -> bool | None:
    """``watch: true``: the caller watches the target from its version now, once the send is accepted (the
    release registers it then), so the send's own run is no change it is told of. None: not asked."""
    if not params.watch:
        return None
    return state_events.may_watch(ctx.caller_key, target) and ctx.store.state.watch(ctx.caller_key, target)


def _main_of(ctx: ToolContext, agent_id: str) -> str:
    """``agentId`` alone names that agent's main session."""
    agent = agent_id.strip().lower()
    if ctx.config.agent(agent) is None:
        raise ToolError(f'Agent "{agent_id}" not found. Run openclaw agents list to see configured agents.')
    return ctx.main_key_of(f"agent:{agent}:{ctx.config.session.main_key}")


def _by_label(ctx: ToolContext, params: SessionsSendParams) -> str:
    """Labels are unique per agent: ``agentId`` picks the agent, else the caller's own."""
    assert params.label is not None
    try:
        agent_id = session_keys.normalize_agent_id(params.agent_id) if params.agent_id else ctx.caller_agent
    except session_keys.SessionKeyError as exc:
        raise ToolError(str(exc)) from None
    found = ctx.store.sessions.key_for_label(agent_id, params.label.strip())
    if found is None or not ctx.may_look_up(found):
        raise ToolError(f"No session found with label: {params.label}")
    return found
