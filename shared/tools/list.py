"""sessions_list (docs/contract.md §2): newest first, from the indexes, never a scan of the keyspace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import islice

from clawbus.shared.base import session_keys
from clawbus.shared.config import Config, Visibility
from clawbus.shared.domain import visibility
from clawbus.shared.domain.output_budget import clean
from clawbus.shared.domain.sessions import channel_of, display_name, transcript_path
from clawbus.shared.ports.context import Context
from clawbus.shared.tools.history_view import project, shown, transcript_source
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.list_schema import Actor, Owner, SessionRow, SessionsListParams, SessionsListResult
from clawbus.shared.wire.models import TOOL_ROLES, SessionEntry, ToolFailure

# The release's page when no limit is given; its largest is the limit's bound in SessionsListParams.
DEFAULT_LIMIT = 100


def sessions_list(ctx: ToolContext, params: SessionsListParams) -> SessionsListResult | ToolFailure:
    """A filter clawbus cannot answer is refused by name, never dropped: dropped, it would list rows the
    caller did not ask for."""
    refused = refusal(params)
    if refused is not None:
        return ToolFailure(status="error", error=refused)
    return _listing(ctx, params)


# The release's relationships to the requesting user (its schema's enum).
RELATIONSHIPS = ("owned", "created", "involving")
_NO_PROJECTS = (
    "it has no projects: no session belongs to one (sessions_spawn refuses projectId), so the filter could "
    "only ever match none"
)
_NO_GROUPS = (
    "it has no session groups (the Control UI's sidebar categories): no session is put in one, so the "
    "filter could only ever match all or none"
)


def refusal(params: SessionsListParams) -> str | None:
    """The first filter asked for that clawbus cannot answer, named, with why (an unknown relationship in
    the release's words first); None when there is none. What the release refuses as input (a filter sent
    blank: ``relationship required``) the parameters' validators refuse."""
    if params.relationship is not None:
        if params.relationship not in RELATIONSHIPS:
            return "relationship must be owned, created, or involving"
        return (
            "relationship is not supported by clawbus: it knows no user behind a call (a caller is a session "
            "or an API token, never a person's profile); filter by ownerId or creatorId instead"
        )
    if params.project_id is not None:
        return f"projectId is not supported by clawbus: {_NO_PROJECTS}"
    # The release reads a group only when it is a text; "" asks for the ungrouped sessions.
    if isinstance(params.group, str):
        return f"group is not supported by clawbus: {_NO_GROUPS}"
    return None


def _listing(ctx: ToolContext, params: SessionsListParams) -> SessionsListResult:
    """Visibility and kinds are applied before the page is cut: a caller pages through the rows it may
    see, ``limit`` at a time from ``offset``."""
    limit = params.limit or DEFAULT_LIMIT
    offset = params.offset or 0
    since = (
        ctx.store.clock.now_ms() - params.active_minutes * 60_000
        if params.active_minutes is not None
        else None
    )
    # One more than the page, to tell whether there is more.
    wanted = offset + limit + 1
    matches = _filter(ctx.config, params, since)
    sources = [False, True] if params.archived == "all" else [bool(params.archived)]
    entries = [
        entry
        for archived in sources
        for entry in _candidates(ctx, params.kinds, since, wanted, matches, archived)
        if matches(entry) and visibility.visible(ctx.config, ctx.caller_key, entry)
    ]
    entries = sorted(entries, key=lambda e: e.updated_at, reverse=True)[:wanted]
    page = entries[offset : offset + limit]
    has_more = len(entries) > offset + limit
    rows = _rows(ctx, page)
    if params.message_limit:
        _attach_messages(ctx, page, rows, params.message_limit)
    if params.include_last_message or params.include_derived_titles:
        _attach_titles(ctx, page, rows, params)
    return SessionsListResult(
        count=len(rows),
        sessions=rows,
        has_more=has_more,
        next_offset=offset + len(page) if has_more else None,
        limit_applied=limit,
    )


def _filter(config: Config, params: SessionsListParams, since: int | None) -> Callable[[SessionEntry], bool]:
    """Whether a session is one the caller asked for (visibility aside)."""
    agent = params.agent_id.lower() if params.agent_id else None
    search = params.search.lower() if params.search else None
    # clawbus pins nothing: every session is unpinned.
    wanted_pinned = params.pinned is not True

    def archived_as_asked(entry: SessionEntry) -> bool:
        if params.archived == "all":
            return True
        return (entry.archived_at is not None) == params.archived

    def matches(entry: SessionEntry) -> bool:
        return (
            archived_as_asked(entry)
            and wanted_pinned
            and (params.kinds is None or entry.kind in params.kinds)
            and (since is None or entry.updated_at >= since)
            and (params.label is None or entry.label == params.label)
            and (agent is None or entry.agent_id == agent)
            and (search is None or any(search in (text or "").lower() for text in _searched(entry)))
            and (not params.active_only or entry.status in ("queued", "running"))
            and (not params.exclude_subagents or entry.spawned_by is None)
            and _made_as_asked(config, entry, params)
        )

    return matches


def _made_as_asked(config: Config, entry: SessionEntry, params: SessionsListParams) -> bool:
    """``ownerId``, ``creatorId`` and ``workspaceDir`` matched exactly against what the session's row
    shows: a spawned session's owner and creator are its spawning agent, its workspace its agent's; any
    other session has none of them, so these filters leave it out (as the release's leave out a session
    without them)."""
    if params.owner_id is None and params.creator_id is None and params.workspace_dir is None:
        return True
    spawner = _spawner(entry)
    if spawner is None:
        return False
    return (
        params.owner_id in (None, spawner)
        and params.creator_id in (None, spawner)
        and params.workspace_dir in (None, str(config.workspace(entry.agent_id)))
    )


def _spawner(entry: SessionEntry) -> str | None:
    """The agent that spawned the session, its row's ``createdActor`` and ``owner``."""
    return session_keys.parse(entry.spawned_by).agent_id if entry.spawned_by else None


def _searched(entry: SessionEntry) -> tuple[str | None, ...]:
    """The metadata ``search`` looks in, as the release's: the key, the label, the name."""
    return (entry.key, entry.label, entry.display_name)


def _candidates(
    ctx: ToolContext,
    kinds: list[str] | None,
    since: int | None,
    limit: int,
    matches: Callable[[SessionEntry], bool],
    archived: bool = False,
) -> Iterator[SessionEntry]:
    """Where the caller's visibility says to look, newest first, never a scan of the keyspace."""
    store = ctx.store
    level = visibility.effective(ctx.config, ctx.caller_key)
    if level not in ("self", "tree"):
        yield from _indexed(ctx, level, kinds, since, limit, matches, archived)
        return
    own = [ctx.caller_key, *store.sessions.children(ctx.caller_key)]
    mine = [entry for entry in store.sessions.get_many(own) if entry is not None]
    yield from mine
    if visibility.main_sees_agent(ctx.config, ctx.caller_key):
        # The main session's tree is its agent's sessions too; its spawns under other agents came above.
        seen = frozenset(entry.key for entry in mine)
        yield from _indexed(ctx, "agent", kinds, since, limit, matches, archived, seen)


def _indexed(
    ctx: ToolContext,
    level: Visibility,
    kinds: list[str] | None,
    since: int | None,
    limit: int,
    matches: Callable[[SessionEntry], bool],
    archived: bool,
    seen: frozenset[str] = frozenset(),
) -> Iterator[SessionEntry]:
    """``limit`` sessions the caller asked for and may see, from the index ``level`` reaches."""
    store = ctx.store
    if archived:  # the archived index, then (for "all") the listed sessions
        candidates = store.sessions.recent(page=limit, archived=True)
    elif level == "agent":  # its own agent's sessions only (docs/contract.md §7)
        candidates = store.sessions.recent(agent_id=ctx.caller_agent, active_since=since, page=limit)
    else:
        candidates = store.sessions.recent(kinds=kinds, active_since=since, page=limit)
    found = 0
    # Pages until ``limit`` rows the caller asked for and may see are found: filtering comes first.
    while found < limit:
        page = list(islice(candidates, max(limit, 50)))
        if not page:
            return
        for entry in store.sessions.get_many(page):
            if (
                entry is not None
                and entry.key not in seen
                and matches(entry)
                and visibility.visible(ctx.config, ctx.caller_key, entry)
            ):
                found += 1
                yield entry


def every_session(ctx: Context, params: SessionsListParams) -> SessionsListResult:
    """The operator's listing: every session, as a caller that sees everything would."""
    config = ctx.config
    tools = config.tools.model_copy(
        update={
            "sessions": config.tools.sessions.model_copy(update={"visibility": "all"}),
            "agent_to_agent": config.tools.agent_to_agent.model_copy(update={"enabled": True, "allow": []}),
        }
    )
    seeing = config.model_copy(update={"tools": tools})
    return _listing(ToolContext.for_caller(Context(seeing, ctx.store, ctx.dispatcher), "main"), params)


def _rows(ctx: ToolContext, entries: list[SessionEntry]) -> list[SessionRow]:
    store = ctx.config.store_url()
    keys = [entry.key for entry in entries]
    children = ctx.store.sessions.children_of_many(keys)
    return [_row(ctx, entry, store, kids) for entry, kids in zip(entries, children, strict=True)]


def _row(ctx: ToolContext, entry: SessionEntry, store: str, children: list[str]) -> SessionRow:
    config = ctx.config
    model_ref = entry.model or config.model_of(entry.agent_id)
    spawner = _spawner(entry)
    workspace = str(config.workspace(entry.agent_id)) if spawner else None
    visible = [key for key in children if visibility.child_visible(config, ctx.caller_key, entry.key, key)]
    return SessionRow(
        key=entry.key,
        session_id=entry.session_id,
        agent_id=entry.agent_id,
        kind=entry.kind,
        channel=channel_of(entry, entry.key, config.session.main_key),
        archived=entry.archived_at is not None,
        label=entry.label,
        created_actor=Actor.agent(spawner) if spawner else None,
        owner=Owner(actor=Actor.agent(spawner)) if spawner else None,
        spawned_workspace_dir=workspace,
        workspace_dir=workspace,
        display_name=display_name(entry, config.session.main_key),
        parent_session_key=entry.spawned_by,
        updated_at=entry.updated_at,
        state_version=entry.state_version or None,
        model=model_ref.partition("/")[2] or model_ref,
        context_tokens=config.context_window(model_ref),
        total_tokens=entry.context_tokens,
        status=entry.status,
        # The release says it of every session that ran, and of a spawned one once more than its task did.
        aborted_last_run=entry.aborted_last_run
        if spawner
        else bool(entry.aborted_last_run)
        if entry.status
        else None,
        child_sessions=visible or None,
        transcript_path=transcript_path(store, entry),
        thinking_level=entry.thinking_level,
        system_sent=entry.system_sent,
        send_policy=entry.send_policy,
        queue_mode=entry.queue_mode,
        last_channel=entry.last_channel,
        last_to=entry.last_to,
        last_account_id=entry.last_account_id,
        delivery_context=None
        if entry.delivery_context is None or entry.delivery_context.is_empty()
        else entry.delivery_context,
        spawned_by=entry.spawned_by,
        spawn_depth=entry.spawn_depth,
        role=entry.role,
        estimated_cost_usd=entry.estimated_cost_usd,
        started_at=entry.started_at,
        ended_at=entry.ended_at,
        runtime_ms=_runtime_ms(entry, ctx.store.clock.now_ms()),
    )


def _runtime_ms(entry: SessionEntry, now: int) -> int | None:
    if entry.started_at is None:
        return None
    ended = entry.ended_at if entry.ended_at is not None and entry.ended_at >= entry.started_at else now
    return max(0, ended - entry.started_at)


# The release's bounds: a preview of at most 200 characters, a title of at most 60.
PREVIEW_CHARS = 200
TITLE_CHARS = 60


def _attach_titles(
    ctx: ToolContext, entries: list[SessionEntry], rows: list[SessionRow], params: SessionsListParams
) -> None:
    """``lastMessagePreview`` (the last message shown, cut) and ``derivedTitle`` (the label, else the row's
    ``displayName``: ``main`` for a main session, else the first line a person wrote, cut at a word)."""
    if params.include_last_message:
        tails = ctx.store.transcripts.tails([entry.key for entry in entries], 10)
        for row, tail in zip(rows, tails, strict=True):
            last = next((m for m in reversed(tail) if m.role not in TOOL_ROLES and shown(m) and m.text), None)
            row.last_message_preview = _cut(" ".join(last.text.split()), PREVIEW_CHARS) if last else None
    if params.include_derived_titles:
        for row, entry in zip(rows, entries, strict=True):
            row.derived_title = entry.label or row.display_name or _first_words(ctx, entry)


def _first_words(ctx: ToolContext, entry: SessionEntry) -> str | None:
    first = next(
        (m for m in ctx.store.transcripts.first(entry.key, 20) if m.role == "user" and m.provenance is None),
        None,
    )
    return _cut(" ".join(first.text.split()), TITLE_CHARS) if first and first.text.strip() else None


def _cut(text: str, limit: int) -> str:
    """Cut at ``limit`` characters with an ellipsis, at a word when one ends late enough (the release's)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return f"{cut[:space]}…" if space > limit * 0.6 else f"{cut}…"


def _attach_messages(
    ctx: ToolContext, entries: list[SessionEntry], rows: list[SessionRow], count: int
) -> None:
    # Tool and silent messages are filtered out after reading, so read a margin beyond the wanted count.
    tails = ctx.store.transcripts.tails([entry.key for entry in entries], count * 3)
    for row, entry, tail in zip(rows, entries, tails, strict=True):
        kept = [m for m in tail if m.role not in TOOL_ROLES and shown(m)][-count:]
        # Shown as sessions_history shows them, their usage kept as the release keeps it in a listing; what
        # a model reads back is cut and redacted as there.
        source = transcript_source(entry.session_id)
        row.messages = clean([project(m, 0, source, with_usage=True) for m in kept])[0]
