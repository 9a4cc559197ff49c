"""sessions_history (docs/contract.md §3): the raw transcript, bounded and redacted for a model to read."""

from __future__ import annotations

from shared import visibility
from shared.errors import ToolError
from shared.models import TOOL_ROLES, ToolFailure
from shared.output_budget import fit
from shared.tools.context import ToolContext
from shared.tools.history_schema import SessionsHistoryParams, SessionsHistoryResult


def sessions_history(ctx: ToolContext, params: SessionsHistoryParams) -> SessionsHistoryResult | ToolFailure:
    try:
        key = ctx.resolve(params.session_key)
    except ToolError as exc:
        return ToolFailure(status="error", error=exc.error)
    entry = ctx.store.sessions.get(key)
    # Visibility first: a session the caller may not see is refused whether or not it exists.
    refused = visibility.refusal(ctx.config, ctx.caller_key, key, entry, "history")
    if refused is not None:
        return ToolFailure(status="forbidden", error=refused)
    if entry is None:
        return ToolFailure(
            status="error",
            error=f"Session not found: {params.session_key} (use the full sessionKey from sessions_list)",
        )
    limit = params.limit or 200
    keep = None if params.include_tools else (lambda role: role not in TOOL_ROLES)
    messages = ctx.store.transcripts.last(key, limit, keep_role=keep)
    budget = fit([m.wire() for m in messages])
    return SessionsHistoryResult(
        session_key=ctx.display(key),
        messages=budget.messages,
        truncated=budget.dropped > 0 or budget.content_truncated,
        dropped_messages=budget.dropped > 0,
        content_truncated=budget.content_truncated,
        content_redacted=budget.content_redacted,
        bytes=budget.bytes,
    )
