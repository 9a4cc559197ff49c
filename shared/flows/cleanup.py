"""What happens to a child once its report is written: deleted now, archived later, or kept."""

from __future__ import annotations

from clawbus.shared.domain import subagents
from clawbus.shared.flows import archive
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.wire.models import Flow, SessionEntry


def clean_up(ctx: FlowContext, flow: Flow, child: SessionEntry | None) -> None:
    """cleanup=delete: the child goes now (its report is already written); run mode: archived later."""
    if child is None:
        return
    if flow.cleanup == "delete":
        archive.discard(ctx.config, ctx.store, child)
    elif flow.mode == "run":
        minutes = subagents.rules(ctx.config, child.agent_id).archive_after_minutes
        if minutes > 0:
            ctx.store.sessions.schedule_archive(child.key, ctx.store.clock.now_ms() + minutes * 60_000)
