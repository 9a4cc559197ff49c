"""sessions_yield (docs/contract.md, "Orchestration"): end this turn now, and wait for every child still to
report; the session is woken once, by one run on all their reports (``shared.flows.report``)."""

from __future__ import annotations

from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import ToolFailure
from clawbus.shared.wire.yielding_schema import SessionsYieldParams, YieldResult


def sessions_yield(ctx: ToolContext, params: SessionsYieldParams) -> YieldResult | ToolFailure:
    """The calling run ends ``ok`` once this returns (the agent loop stops at a ``YieldResult``), its reply
    the ``message`` given. A repeated call of the same run yields once."""
    if params.wait_for is not None and params.wait_for != "message":
        return ToolFailure(status="error", error='waitFor must be "message" when provided.')
    if ctx.origin_run_id is None:
        # Outside an agent's run there is no turn to end: the release's words for each case.
        context = ctx.store.sessions.exists(ctx.caller_key)
        return ToolFailure(
            status="error", error="Yield not supported in this context" if context else "No session context"
        )
    found = ctx.store.sessions.yield_children(ctx.caller_key, ctx.origin_run_id)
    if found is None:
        return ToolFailure(
            status="error",
            error="sessions_yield: no sub-agent of this session is still to report, so there is nothing to "
            "wait for; go on with your turn",
        )
    _number, pending = found
    return YieldResult(waiting_for=pending)
