"""sessions_list (docs/contract.md §2): newest first, from the indexes, never a scan of the keyspace."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice

from shared import visibility
from shared.config import Config
from shared.dispatch import Dispatcher
from shared.models import TOOL_ROLES, SessionEntry, SessionFacts
from shared.output_budget import clean
from shared.ports import Storage
from shared.sessions import channel_of, transcript_path
from shared.tools.context import ToolContext
from shared.tools.list_schema import SessionRow, SessionsListParams, SessionsListResult


def sessions_list(ctx: ToolContext, params: SessionsListParams) -> SessionsListResult:
    """Visibility and kinds are applied before the limit: a caller gets up to ``limit`` rows it may see."""
    limit = params.limit or 50
    since = (
        ctx.store.clock.now_ms() - params.active_minutes * 60_000
        if params.active_minutes is not None
        else None
    )
    entries = [
        entry
        for entry in _candidates(ctx, params.kinds, since, limit)
        if (params.kinds is None or entry.kind in params.kinds)
        and (since is None or entry.updated_at >= since)
        and entry.archived_at is None
        and visibility.visible(ctx.config, ctx.caller_key, entry)
    ]
    entries = sorted(entries, key=lambda e: e.updated_at, reverse=True)[:limit]
    store = ctx.config.store_url()
    rows = [_row(ctx, entry, store) for entry in entries]
    if params.message_limit:
        _attach_messages(ctx, entries, rows, params.message_limit)
    return SessionsListResult(count=len(rows), sessions=rows)


def _candidates(
    ctx: ToolContext, kinds: list[str] | None, since: int | None, limit: int
) -> Iterator[SessionEntry]:
    """Where the caller's visibility says to look, newest first, never a scan of the keyspace."""
    store = ctx.store
    level = visibility.effective(ctx.config, ctx.caller_key)
    if level in ("self", "tree"):
        own = [ctx.caller_key, *store.sessions.children(ctx.caller_key)]
        yield from (entry for entry in store.sessions.get_many(own) if entry is not None)
        return
    if level == "agent":  # its own agent's sessions only (docs/contract.md §7)
        candidates = store.sessions.recent(agent_id=ctx.caller_agent, active_since=since, page=limit)
    else:
        candidates = store.sessions.recent(kinds=kinds, active_since=since, page=limit)
    found = 0
    # Pages until ``limit`` visible rows are found: filtering comes before the limit.
    while found < limit:
        page = list(islice(candidates, max(limit, 50)))
        if not page:
            return
        for entry in store.sessions.get_many(page):
            if (
                entry is not None
                and (kinds is None or entry.kind in kinds)
                and visibility.visible(ctx.config, ctx.caller_key, entry)
            ):
                found += 1
                yield entry


def every_session(
    config: Config, store: Storage, dispatcher: Dispatcher, params: SessionsListParams
) -> SessionsListResult:
    """The operator's listing: every session, as a caller that sees everything would."""
    tools = config.tools.model_copy(
        update={
            "sessions": config.tools.sessions.model_copy(update={"visibility": "all"}),
            "agent_to_agent": config.tools.agent_to_agent.model_copy(update={"enabled": True, "allow": []}),
        }
    )
    seeing = config.model_copy(update={"tools": tools})
    return sessions_list(ToolContext.for_caller(seeing, store, dispatcher, "main"), params)


_FACTS = frozenset(SessionFacts.model_fields)


def _row(ctx: ToolContext, entry: SessionEntry, store: str) -> SessionRow:
    facts = {name: getattr(entry, name) for name in _FACTS}
    if entry.delivery_context is not None and entry.delivery_context.is_empty():
        facts["delivery_context"] = None
    facts["model"] = entry.model or ctx.config.model_of(entry.agent_id)
    return SessionRow(
        **facts,
        key=ctx.display(entry.key),
        kind=entry.kind,
        channel=channel_of(entry, entry.key, ctx.config.session.main_key),
        updated_at=entry.updated_at,
        session_id=entry.session_id,
        transcript_path=transcript_path(store, entry),
    )


def _attach_messages(
    ctx: ToolContext, entries: list[SessionEntry], rows: list[SessionRow], count: int
) -> None:
    # Tool messages are filtered out after reading, so read a margin beyond the wanted count.
    tails = ctx.store.transcripts.tails([entry.key for entry in entries], count * 3)
    for row, tail in zip(rows, tails, strict=True):
        kept = [m.wire() for m in tail if m.role not in TOOL_ROLES]
        # What a model reads back is cut and redacted here as in sessions_history.
        row.messages = clean(kept[-count:])[0]
