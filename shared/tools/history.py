"""sessions_history (docs/contract.md §3): the transcript, bounded and redacted for a model to read, in the
release's message shapes (``history_view``), with the inputs still waiting their turn."""

from __future__ import annotations

import json
from typing import Any

from clawbus.shared.base.errors import ToolError
from clawbus.shared.domain import visibility
from clawbus.shared.domain.output_budget import RESULT_BYTES, Budgeted, fit, fit_around
from clawbus.shared.tools.history_view import project, shown, transcript_source
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.history_schema import PendingInputs, SessionsHistoryParams, SessionsHistoryResult
from clawbus.shared.wire.models import TOOL_ROLES, RunStatus, SessionEntry, ToolFailure

DEFAULT_LIMIT = 200
# The release reads at most this many pending inputs a call, whatever the limit (readPendingInputRows).
PENDING_PAGE = 20


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
    # Named as asked when that was ``main``, else by its key, as the release echoes it.
    shown_key = "main" if params.session_key.strip() == "main" else key
    if entry is None:
        # A main session that has had no message yet has an empty history, not none (nor a transcript
        # that a sessionId could name).
        if key == ctx.main_key_of(key) and params.session_id is None:
            return _result(shown_key, [], PendingInputs())
        if key == ctx.main_key_of(key):
            return ToolFailure(status="error", error=NOT_ITS_SESSION)
        return ToolFailure(status="error", error=ctx.missing_session(params.session_key, key))
    if params.message_id is not None:
        return _around(ctx, params, params.message_id, entry, shown_key)
    tools = params.include_tools
    offset = params.offset or 0
    # The limit and the offset count messages as shown: the silent ones are not.
    read = ctx.store.transcripts.last(
        key,
        offset + (params.limit or DEFAULT_LIMIT),
        keep=lambda m: shown(m) and (tools or m.role not in TOOL_ROLES),
    )
    # ``offset`` counts back from the newest message: the page ends that many before it.
    messages = read[: len(read) - offset] if offset else read
    total = ctx.store.transcripts.length(key)
    first = total - offset - len(messages) + 1
    source = transcript_source(entry.session_id)
    projected = [project(m, first + i, source) for i, m in enumerate(messages)]
    # The release counts dropping a message's usage as cutting its content, and so does this.
    stripped = any(m.usage is not None for m in messages)
    result = _result(shown_key, projected, _pending(ctx, entry, params), stripped)
    if params.offset is None:
        return result
    more = first > 1
    return result.model_copy(
        update={
            "offset": offset,
            "next_offset": offset + len(messages) if more else None,
            "has_more": more,
            "total_messages": total,
        }
    )


# The release's text for a sessionId that is not the session's (a session keeps one id for its life here).
NOT_ITS_SESSION = "sessionId does not belong to sessionKey"


def _around(
    ctx: ToolContext, params: SessionsHistoryParams, message_id: str, entry: SessionEntry, shown_key: str
) -> SessionsHistoryResult | ToolFailure:
    """The release's window around one message: ``limit`` messages as shown, the message with about half
    of them older than it (fewer near either end of the transcript, the rest then taken from the other
    side), bounded by bytes around it. A message not in the transcript is an empty history, as there;
    ``offset`` is ignored and no page fields are given, as there."""
    if params.session_id is not None and params.session_id.lower() != entry.session_id.lower():
        return ToolFailure(status="error", error=NOT_ITS_SESSION)
    # Every message, hot and cold: the message may be anywhere, and its place is counted from the first.
    every = ctx.store.transcripts.all(entry.key)
    place = next((i for i, m in enumerate(every) if m.id == message_id), None)
    if place is None:
        return _result(shown_key, [], _pending(ctx, entry, params))
    tools = params.include_tools
    kept = [(seq, m) for seq, m in enumerate(every, 1) if shown(m) and (tools or m.role not in TOOL_ROLES)]
    # Where the message stands among those shown (a message not shown itself, as a tool result without
    # includeTools, still centres the window).
    at = sum(1 for seq, _ in kept if seq <= place)
    start, end = anchor_window(len(kept), at, params.limit or DEFAULT_LIMIT)
    window = kept[start:end]
    source = transcript_source(entry.session_id)
    projected = [project(m, seq, source) for seq, m in window]
    anchor = next((i for i, (_, m) in enumerate(window) if m.id == message_id), -1)
    stripped = any(m.usage is not None for _, m in window)
    return _result(shown_key, projected, _pending(ctx, entry, params), stripped, anchor)


def anchor_window(total: int, anchor: int, size: int) -> tuple[int, int]:
    """``[start, end)`` of ``size`` items out of ``total`` around the item at ``anchor``: ``size - size // 2
    - 1`` older than it where there are, shifted to stay ``size`` long near the newest (the release's
    ``resolveHistoryAnchorPageRange``)."""
    older = size - size // 2 - 1
    start = min(max(0, anchor - older), max(0, total - size))
    return start, min(total, start + size)


def _result(
    session_key: str,
    messages: list[dict[str, Any]],
    pending: PendingInputs,
    stripped: bool = False,
    anchor: int | None = None,
) -> SessionsHistoryResult:
    """``anchor``: the index of the message a window was asked around, kept first within the byte budget
    (-1: not shown); None: the newest messages are kept."""
    pending_bytes = len(json.dumps(pending.wire(), separators=(",", ":")).encode())
    budget = _fitted(messages, RESULT_BYTES - pending_bytes, anchor)
    cut = budget.content_truncated or stripped
    return SessionsHistoryResult(
        session_key=session_key,
        messages=budget.messages,
        truncated=budget.dropped > 0 or cut,
        dropped_messages=budget.dropped > 0,
        content_truncated=cut,
        content_redacted=budget.content_redacted,
        bytes=budget.bytes + pending_bytes,
        pending_inputs=pending,
    )


def _fitted(messages: list[dict[str, Any]], max_bytes: int, anchor: int | None) -> Budgeted:
    if anchor is None or anchor < 0:
        return fit(messages, max_bytes=max_bytes)
    return fit_around(messages, anchor, max_bytes=max_bytes)


def _pending(ctx: ToolContext, entry: SessionEntry, params: SessionsHistoryParams) -> PendingInputs:
    """The session's runs accepted and not started yet (their messages are not in the transcript yet), a
    page at a time as the release pages its pending inputs: at most ``limit`` and never more than
    PENDING_PAGE, the newest of those older than ``pendingBefore``, shown oldest first. A run's ``seq``
    (its place among its session's runs) is the cursor: it never changes while the run waits."""
    lane = ctx.store.runs.lane(entry.key)
    runs = [run for run in (ctx.store.runs.get(run_id) for run_id in lane) if run is not None]
    queued = [run for run in runs if run.status is RunStatus.QUEUED]
    before = params.pending_before
    older = [run for run in queued if before is None or run.seq < before]
    page = older[-min(params.limit or DEFAULT_LIMIT, PENDING_PAGE) :]  # the limit is at least 1
    inputs = ctx.store.runs.inputs([run.run_id for run in page])
    items = [
        {
            "id": run.run_id,
            "state": "queued",
            "acceptedAt": run.created_at,
            "message": {"role": "user", "content": message.text},
        }
        for run, message in zip(page, inputs, strict=True)
        if message is not None
    ]
    next_before = page[0].seq if len(older) > len(page) else None
    return PendingInputs(items=items, total=len(queued), next_before=next_before)
