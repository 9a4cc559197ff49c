"""sessions_spawn (docs/contract.md §6): start a sub-agent in its own session; its result is announced
back later.

Returns at once. The child runs on the ``subagent`` queue; when it ends (ok, error or timeout), the flow's
announce step runs on the child session and its normalized reply is posted to the requester's channel and
recorded in the requester's transcript (``shared/flows.py``).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Literal

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.domain import attachments, chains, state_events, subagents
from clawbus.shared.domain.chains import Chain, ChainStopped
from clawbus.shared.domain.output_budget import fit
from clawbus.shared.domain.runs import LaneHead, inter_session_run
from clawbus.shared.domain.sessions import THREADED_CHANNELS, Route, SessionPatch, new_entry, route_of
from clawbus.shared.flows.create import new_spawn_flow
from clawbus.shared.intake import threads
from clawbus.shared.intake.submit import enqueue_accepted, submit
from clawbus.shared.tools import spawn_options
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.attachments import AttachmentReceipt
from clawbus.shared.wire.models import (
    THINKING_LEVELS,
    TOOL_ROLES,
    DeliveryContext,
    Message,
    SessionEntry,
    SpawnRole,
    ToolFailure,
)
from clawbus.shared.wire.spawn_schema import NOTE, PRIVATE_NOTE, QUIET_NOTE, SessionsSpawnParams, SpawnResult

# Reports of a session's children that no turn of it has read yet: a warning from the first, a refusal
# from the second (a fan-out that outruns its reader).
UNREAD_WARNED = 25
UNREAD_REFUSED = 50


def sessions_spawn(ctx: ToolContext, params: SessionsSpawnParams) -> SpawnResult | ToolFailure:
    run_id = ctx.new_run_id()
    earlier = ctx.store.runs.get(run_id) if ctx.id_seed else None
    if earlier is not None:  # an agent's call repeated after its worker was lost: the spawn it already made
        entry = ctx.store.sessions.get(earlier.session_key)
        mode = (entry.mode if entry else None) or "run"
        # The same call again: its options are the ones the spawn was made with.
        return SpawnResult(
            run_id=run_id,
            child_session_key=earlier.session_key,
            mode=mode,
            expects_completion_message=params.expects_completion_message,
            completion_target=params.completion_target,
            task_name=params.task_name,
            note=_note(params),
        )
    if params.model is not None and "/" not in params.model:
        # A bare model id is the default provider's, as the release reads it.
        provider = ctx.config.model_of(ctx.config.default_agent.id).partition("/")[0]
        params = params.model_copy(update={"model": f"{provider}/{params.model}"})
    try:
        agent_id, mode = _check(ctx, params)
        files = (
            attachments.decode_all(ctx.config.tools.sessions_spawn.attachments, params.attachments)
            if params.attachments
            else []
        )
        context, inherited = _start_context(ctx, params, agent_id)
        child_key = session_keys.subagent_key(agent_id)
        chain = ctx.next_hop(run_id, child_key)
        # Opened once every check passed, before anything is written.
        bound = _bound_route(ctx, params) if params.thread else None
        workspace = ctx.config.workspace(agent_id)
        receipt = attachments.materialize(workspace, files) if files else None
    except ChainStopped as stopped:
        return chains.refusal(stopped)
    except ToolError as exc:
        # The release's refusals carry no run, and name the agent asked for when that was the matter.
        return ToolFailure(
            status="forbidden" if exc.status == "forbidden" else "error",
            error=exc.error,
            role=params.agent_id if "agentId" in exc.error else None,
        )
    try:
        caller = _start(ctx, params, run_id, agent_id, mode, child_key, receipt, bound, chain, inherited)
    except ChainStopped as stopped:
        _undo(ctx, workspace, receipt, child_key)
        return chains.refusal(stopped)
    except BaseException:
        _undo(ctx, workspace, receipt, child_key)
        raise
    unread = (caller.unread_reports if caller else None) or 0
    warning = (
        f"{unread} reports of this session's children are unread; at {UNREAD_REFUSED} spawns are refused "
        "until a turn of this session reads them"
        if unread >= UNREAD_WARNED
        else None
    )
    model_ref = params.model or subagents.rules(ctx.config, agent_id).model or ctx.config.model_of(agent_id)
    return SpawnResult(
        run_id=run_id,
        child_session_key=child_key,
        mode=mode,
        expects_completion_message=params.expects_completion_message,
        completion_target=params.completion_target,
        context=context,
        task_name=params.task_name,
        note=_note(params),
        resolved_model=model_ref,
        resolved_provider=model_ref.partition("/")[0],
        model_applied=True,
        attachments=receipt,
        warning=warning,
    )


# How much of the requester's transcript a forked child starts with: the newest messages, as many as a
# model reads of a session (the openai runtime's window), within sessions_history's budget.
FORK_MESSAGES = 100


def _start_context(
    ctx: ToolContext, params: SessionsSpawnParams, agent_id: str
) -> tuple[Literal["fork", "isolated"], list[Message]]:
    """The context the child starts with and what it inherits. A fork asked for must be possible; one
    that is only the thread-bound default (``session.threadBindings.defaultSpawnContext``) gives way to an
    isolated start where it is not (another agent, a requester with no transcript yet)."""
    if params.context is not None:
        return params.context, _inherited(ctx, agent_id) if params.context == "fork" else []
    if not params.thread or ctx.config.session.thread_bindings.default_spawn_context == "isolated":
        return "isolated", []
    try:
        return "fork", _inherited(ctx, agent_id)
    except ToolError:
        return "isolated", []


def _inherited(ctx: ToolContext, agent_id: str) -> list[Message]:
    """What a forked child starts with: the requester's transcript so far, newest last, within the budget,
    never opening on a tool's result whose call was cut off (no model takes that back)."""
    if agent_id != ctx.caller_agent:
        raise ToolError(
            'context="fork" currently requires the same target agent as the requester; use '
            'context="isolated" for cross-agent spawns.'
        )
    messages = ctx.store.transcripts.last(ctx.caller_key, FORK_MESSAGES)
    if not messages:
        raise ToolError('context="fork" requested but the requester session transcript is not available.')
    kept = fit([m.wire() for m in messages]).dropped
    inherited = messages[kept:]
    while inherited and inherited[0].role in TOOL_ROLES:
        inherited = inherited[1:]
    return [m.model_copy(update={"id": str(uuid.uuid4())}) for m in inherited]


def _note(params: SessionsSpawnParams) -> str:
    """What the requester is told to expect of the child's report, as the release words each case."""
    if not params.expects_completion_message:
        return QUIET_NOTE
    return PRIVATE_NOTE if params.completion_target == "parent" else NOTE


def _check(ctx: ToolContext, params: SessionsSpawnParams) -> tuple[str, Literal["run", "session"]]:
    """docs/contract.md §6's checks, in its order; the agent id and the mode to use."""
    for refused in (spawn_options.task_name_refusal(params.task_name), spawn_options.refusal(params)):
        if refused is not None:
            raise ToolError(refused)
    mode: Literal["run", "session"] = params.mode or ("session" if params.thread else "run")
    if mode == "session" and not params.thread:
        raise ToolError(
            'sessions_spawn(mode="session") requires thread=true so the subagent can stay bound to a channel '
            'thread. Retry with { mode: "session", thread: true } on a channel that supports threads, or use '
            'mode="run" for one-shot work.'
        )
    private = spawn_options.completion_target_refusal(params, mode)
    if private is not None:
        raise ToolError(private)
    config, requester = ctx.config, ctx.caller_agent
    spawning = subagents.rules(config, requester)
    if spawning.require_agent_id and params.agent_id is None:
        raise ToolError(
            "sessions_spawn needs an agentId here (subagents.requireAgentId). Use agents_list to discover "
            "valid targets."
        )
    try:
        agent_id = session_keys.normalize_agent_id(params.agent_id) if params.agent_id else requester
    except session_keys.SessionKeyError:
        raise ToolError(
            f'Invalid agentId "{params.agent_id}". Agent IDs must match [a-z0-9][a-z0-9_-]{{0,63}}. '
            "Use agents_list to discover valid targets."
        ) from None
    caller = ctx.store.sessions.get(ctx.caller_key)
    if caller is not None and caller.killed_at is not None:
        raise ToolError("sessions_spawn is not allowed from a killed session", "forbidden")
    _within_depth(ctx, caller, spawning.max_spawn_depth)
    if not subagents.may_spawn(config, requester, agent_id):
        _any, allowed = subagents.allowed_agents(config, requester)
        # An agent may always spawn itself: the release lists it among the allowed.
        listed = ", ".join(sorted({requester, *allowed}))
        raise ToolError(f"agentId is not allowed for sessions_spawn (allowed: {listed})", "forbidden")
    if config.agent(agent_id) is None:
        raise ToolError(
            f'agentId "{agent_id}" is not a configured agent. Use agents_list to discover valid targets.'
        )
    elsewhere = spawn_options.cwd_refusal(params.cwd, config.workspace(agent_id))
    if elsewhere is not None:
        raise ToolError(elsewhere)
    child_sandboxed = config.sandbox_mode(agent_id) != "off"
    if subagents.sandboxed(config, requester, ctx.caller_key) and not child_sandboxed:
        raise ToolError(
            "Sandboxed sessions cannot spawn unsandboxed subagents. Set a sandboxed target agent or use "
            "the same agent runtime.",
            "forbidden",
        )
    if params.sandbox == "require" and not child_sandboxed:
        raise ToolError(
            'sessions_spawn sandbox="require" needs a sandboxed target runtime. Pick a sandboxed agentId '
            'or use sandbox="inherit".',
            "forbidden",
        )
    if params.model is not None and params.model not in config.models.refs():
        configured = ", ".join(config.models.refs())
        raise ToolError(
            f'sessions_spawn model "{params.model}" is not usable: Unknown model: {params.model} '
            f"(configured: {configured})"
        )
    if params.thinking is not None and params.thinking not in THINKING_LEVELS:
        raise ToolError(
            f'Invalid thinking level "{params.thinking}". Use one of: {", ".join(THINKING_LEVELS)}.'
        )
    _within_fan_out(ctx, caller, spawning.max_children)
    if params.label and ctx.store.sessions.key_for_label(agent_id, params.label):
        raise ToolError(f'label "{params.label}" is already used by a session of agent "{agent_id}"')
    if params.thread:
        _caller_route(ctx)
    return agent_id, mode


def depth_of(entry: SessionEntry | None, session_key: str) -> int:
    """A session's spawn depth as written at its spawn (a sub-agent from before depths were written: 1)."""
    if entry is not None and entry.spawn_depth is not None:
        return entry.spawn_depth
    return 1 if session_keys.is_subagent(session_key) else 0


def _within_depth(ctx: ToolContext, caller: SessionEntry | None, max_depth: int) -> None:
    """A sub-agent spawns only while it is an orchestrator below ``maxSpawnDepth``."""
    depth = depth_of(caller, ctx.caller_key)
    leaf = depth > 0 and (caller is None or caller.role != "orchestrator")
    if depth >= max_depth or leaf:
        raise ToolError(
            f"sessions_spawn is not allowed from sub-agent sessions at depth {depth} "
            f"(subagents.maxSpawnDepth is {max_depth})",
            "forbidden",
        )


def _within_fan_out(ctx: ToolContext, caller: SessionEntry | None, max_children: int) -> None:
    """Children that have not ended are bounded per session, and so are reports it has not read yet."""
    running = [
        child
        for child in ctx.store.sessions.get_many(ctx.store.sessions.children(ctx.caller_key))
        if child is not None and child.status == "running"
    ]
    if len(running) >= max_children:
        raise ToolError(
            f"sessions_spawn refused: this session has {len(running)} children that have not ended "
            f"(subagents.maxChildrenPerAgent is {max_children})",
            "forbidden",
        )
    unread = (caller.unread_reports if caller else None) or 0
    if unread >= UNREAD_REFUSED:
        raise ToolError(
            f"sessions_spawn refused: {unread} reports of this session's children are unread (the limit "
            f"is {UNREAD_REFUSED}); take them in (a turn of yours reads them) before spawning more",
            "forbidden",
        )


def _caller_route(ctx: ToolContext) -> Route:
    """The route ``thread: true`` binds from: a thread the caller is in, or (Discord) a channel a thread can
    be opened on. Anything else is refused rather than the flag ignored."""
    caller = ctx.store.sessions.get(ctx.caller_key) or new_entry(ctx.config, ctx.caller_key, 0)
    route = route_of(caller)
    if route.channel not in THREADED_CHANNELS:
        raise ToolError(
            f"thread=true needs a channel with threads ({', '.join(THREADED_CHANNELS)}); this session "
            f'posts to "{route.channel}"'
        )
    refused = threads.refusal(ctx.config, route, ctx.caller_key)
    if refused:
        raise ToolError(refused)
    return route


def _bound_route(ctx: ToolContext, params: SessionsSpawnParams) -> Route:
    """Where the child is bound: the caller's thread, or a thread opened for it on the caller's channel."""
    route = _caller_route(ctx)
    if not threads.opens_thread(ctx.config, route):
        return route
    thread_id = threads.open_thread(ctx.config, route, params.label or params.task)
    return Route(route.channel, route.to, route.account_id, thread_id)


def _undo(ctx: ToolContext, workspace: Path, receipt: AttachmentReceipt | None, child_key: str) -> None:
    """Nothing of a spawn that did not start is left: neither its files nor its provisional session."""
    if receipt is not None:
        attachments.remove(workspace, receipt.rel_dir)
    entry = ctx.store.sessions.get(child_key)
    if entry is not None:
        ctx.store.sessions.delete(entry)


def _start(
    ctx: ToolContext,
    params: SessionsSpawnParams,
    run_id: str,
    agent_id: str,
    mode: Literal["run", "session"],
    child_key: str,
    receipt: AttachmentReceipt | None,
    bound: Route | None,
    chain: Chain,
    inherited: list[Message],
) -> SessionEntry | None:
    """Create the child and its flow, and enqueue its run; the caller's entry (None: it has none yet)."""
    config, store = ctx.config, ctx.store
    now = store.clock.now_ms()
    cleanup: Literal["delete", "keep"] = "keep" if mode == "session" else params.cleanup or "keep"
    caller = store.sessions.get(ctx.caller_key)
    child_rules = subagents.rules(config, agent_id)
    depth = depth_of(caller, ctx.caller_key) + 1
    role: SpawnRole = "orchestrator" if depth < child_rules.max_spawn_depth else "leaf"
    ancestors = (caller.spawn_chain if caller else None) or []
    child = new_entry(config, child_key, now).model_copy(
        update={
            "spawned_by": ctx.caller_key,
            "spawn_depth": depth,
            "role": role,
            "spawn_flow_id": run_id,
            "spawn_chain": [ctx.caller_key, *ancestors],
            "model": params.model or child_rules.model,
            "thinking_level": params.thinking or child_rules.thinking,
            "mode": mode,
            "cleanup": cleanup,
            "deliver": False,
            "status": "running",
            "attachments_dir": receipt.rel_dir if receipt else None,
            "delivery_context": _context(bound) if bound else None,
        }
    )
    timeout_s = (
        params.run_timeout_seconds
        if params.run_timeout_seconds is not None
        else child_rules.run_timeout_seconds
    )
    new = inter_session_run(
        child,
        "subagent",
        f"[Subagent Task]: {params.task}",
        run_id=run_id,
        now=now,
        source_key=ctx.caller_key,
        source_tool="sessions_spawn",
        source_run_id=ctx.origin_run_id,
        context=_system_text(
            ctx, child_key, role, receipt, config.workspace(agent_id), params.expects_completion_message
        ),
        flow_id=run_id,
        chain=chain,
        timeout_ms=int(timeout_s * 1000) or None,
    )
    flow = new_spawn_flow(
        config,
        run_id=run_id,
        requester_key=ctx.caller_key,
        requester=caller,
        child=child,
        task=params.task,
        cleanup=cleanup,
        mode=mode,
        now=now,
        chain=chain,
        expects_completion_message=params.expects_completion_message,
        completion_target=params.completion_target,
        task_name=params.task_name,
    )
    spawned = state_events.child_spawned(ctx.caller_key, run_id)
    window = ctx.chain_window()
    accepted = submit(
        store.runs, ctx.dispatcher, child, {}, new, flow, dispatch=False, state_event=spawned, window=window
    )
    if accepted.chain_full and window is not None:
        raise chains.over_window(chain, window)  # nothing was written: the caller removes what it made
    if inherited:  # before its first run takes its task in, after them
        store.transcripts.append(child_key, inherited)
    # A fire-and-forget child owes its requester no report: nothing waits for it (a yield, an orchestrator's
    # own report), as the release waits only for children whose completion is required.
    store.sessions.add_child(ctx.caller_key, child_key, awaited=params.expects_completion_message)
    if params.label:
        store.sessions.patch(child, SessionPatch({"label": params.label}))
    if bound is not None:
        threads.bind(store, config, bound, child_key, ctx.caller_key)
    # Enqueued once the parent knows its child (visibility) and the label is set; its run task then
    # carries the spawn through its announce and delivery (``flows.engine.follow``).
    # A child whose enqueue fails is still accepted (the reaper enqueues it after the grace): the spawn is.
    enqueue_accepted(ctx.dispatcher, LaneHead(run_id, child_key, "subagent", run_id))
    return caller


def _system_text(
    ctx: ToolContext,
    child_key: str,
    role: SpawnRole,
    receipt: AttachmentReceipt | None,
    workspace: Path,
    reports: bool,
) -> str:
    tools = subagents.tool_set(ctx.config, ctx.tool_names, role)
    lines = [
        f"You are a sub-agent spawned by session {ctx.caller_key}; your session is {child_key}.",
        f"Your tools: {', '.join(tools)}." if tools else "You have no tools.",
        "When you finish, you will be asked to report back (Result / Notes)."
        if reports
        else "No report is sent back when you finish: nobody waits for an announcement.",
    ]
    if role == "orchestrator":
        lines.append(
            "You may spawn sub-agents of your own. Their reports come back to you; to wait for all of them, "
            "end your turn with sessions_yield, and you will be woken once with every report."
        )
    if receipt is not None:
        lines.append(
            f"Attachments: {receipt.count} file(s), {receipt.total_bytes} bytes, in "
            f"{workspace}/{receipt.rel_dir} (listed with sha256 in .manifest.json)."
        )
    return "\n".join(lines)


def _context(route: Route) -> DeliveryContext:
    return DeliveryContext(
        channel=route.channel, to=route.to, account_id=route.account_id, thread_id=route.thread_id
    )
