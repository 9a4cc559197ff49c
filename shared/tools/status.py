"""session_status (docs/contract.md, "Orchestration"): the calling session's status card, and the one
setting it may change, its model."""

from __future__ import annotations

from shared import queueing
from shared.models import ToolFailure
from shared.sessions import SessionPatch
from shared.tools.context import ToolContext
from shared.tools.subagents_schema import SessionStatusCard, SessionStatusParams


def session_status(ctx: ToolContext, params: SessionStatusParams) -> SessionStatusCard | ToolFailure:
    config, store = ctx.config, ctx.store
    entry = store.sessions.get(ctx.caller_key)
    if entry is None:
        return ToolFailure(status="error", error=f"{ctx.display(ctx.caller_key)} has no session yet")
    if params.model is not None:
        if params.model not in config.models.refs():
            configured = ", ".join(config.models.refs())
            return ToolFailure(
                status="error", error=f"unknown model: {params.model} (configured: {configured})"
            )
        entry = store.sessions.patch(entry, SessionPatch({"model": params.model})) or entry
    lane = store.runs.lane(entry.key)
    head = store.runs.get(lane[0]) if lane else None
    running = 1 if head is not None and head.status.value == "running" else 0
    latest = store.runs.latest(entry.key)
    pending = entry.pending_children or 0
    if entry.waiting is not None:
        state = f"waiting for {pending} children"
    elif running:
        state = "running"
    else:
        state = f"idle (last run {latest.status.value})" if latest else "idle"
    mode = queueing.mode_for(config, entry, entry.last_channel, None)
    source = (
        "session"
        if entry.queue_mode
        else "channel"
        if entry.last_channel in config.messages.queue.by_channel
        else "default"
    )
    return SessionStatusCard(
        session_key=ctx.display(entry.key),
        agent_id=entry.agent_id,
        model=entry.model or config.model_of(entry.agent_id),
        model_override=entry.model,
        thinking=entry.thinking_level,
        total_tokens=entry.total_tokens,
        estimated_cost_usd=entry.estimated_cost_usd,
        runs_queued=len(lane) - running,
        runs_running=running,
        queue_mode=mode,
        queue_mode_source=source,
        children_pending=pending,
        state=state,
        last_run_status=latest.status.value if latest else None,
        spawn_depth=entry.spawn_depth or 0,
        role=entry.role,
    )
