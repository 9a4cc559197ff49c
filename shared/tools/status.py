"""session_status (docs/contract.md, "Orchestration"): a session's status card, as OpenClaw 2026.9.6
answers it (its details and its ``statusText``), with clawbus's own facts beside; and the one setting it
may change, the session's model.

The card is of the caller by default (``current`` too), else of any session the caller may see. One that
does not exist is an error result; the release fails the call there (HTTP 500), clawbus never does.
"""

from __future__ import annotations

import json
import os
from importlib import metadata
from typing import Any, Literal

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.config import Config
from clawbus.shared.config.providers import OpenAIProvider, UnknownModel
from clawbus.shared.domain import chains, state_events, subagents, visibility
from clawbus.shared.domain.budget_view import agent_budget
from clawbus.shared.domain.budgets import day_of
from clawbus.shared.domain.sessions import SessionPatch, new_entry
from clawbus.shared.flows import queueing
from clawbus.shared.tools.status_card import DEFAULT_CONTEXT_WINDOW, CardFacts, compact_duration, render
from clawbus.shared.tools.subagents_view import (
    CardTask,
    follow_up_card_task,
    follow_ups,
    observe,
    spawn_card_task,
    subagents_line,
    tasks_line,
    tree,
)
from clawbus.shared.tools.tool_context import ToolContext, looks_like_key
from clawbus.shared.wire.fleet import AgentBudget
from clawbus.shared.wire.models import Run, SessionEntry, ToolFailure
from clawbus.shared.wire.subagents_schema import (
    RunChain,
    SessionStatusCard,
    SessionStatusParams,
    StateChanges,
    StatusBudget,
)

Target = tuple[str, SessionEntry | None]


def session_status(ctx: ToolContext, params: SessionStatusParams) -> SessionStatusCard | ToolFailure:
    try:
        key, entry = _target(ctx, params.session_key)
        if params.model is not None:
            entry = _set_model(ctx, key, entry, params.model)
    except ToolError as exc:
        return ToolFailure(status="forbidden" if exc.status == "forbidden" else "error", error=exc.error)
    card = _card(ctx, key, entry, model_asked=params.model is not None)
    return _with_state(ctx, key, card, params.changes_since)


# --- which session -------------------------------------------------------------------------------------


def _target(ctx: ToolContext, reference: str | None) -> Target:
    """The session the card is of, and its entry (None: the caller's own session, not used yet)."""
    if reference is None or reference == session_keys.CURRENT:
        return ctx.caller_key, ctx.store.sessions.get(ctx.caller_key)
    unknown = f"Unknown {'sessionKey' if looks_like_key(reference) else 'sessionId'}: {reference}"
    if session_keys.is_session_id(reference):
        key = ctx.store.sessions.key_for_session_id(reference)
        if key is None or not ctx.may_look_up(key):
            raise ToolError(unknown)
    else:
        key = ctx.resolve(reference)
    entry = ctx.store.sessions.get(key)
    if key == ctx.caller_key:
        return key, entry
    if entry is None:
        raise ToolError(unknown)
    refused = visibility.refusal(ctx.config, ctx.caller_key, key, entry, "history")
    if refused:
        raise ToolError(_as_status(refused), "forbidden")
    return key, entry


def _as_status(refusal: str) -> str:
    """A visibility refusal in the release's words for this tool: what history may not read, status may
    not show (shared.domain.visibility words it for history)."""
    for history, status in (
        ("Session history ", "Session status "),
        ("Agent-to-agent history ", "Agent-to-agent status "),
        ("cross-agent history.", "cross-agent status."),
    ):
        refusal = refusal.replace(history, status)
    return refusal


# --- change tracking -----------------------------------------------------------------------------------


def _with_state(ctx: ToolContext, key: str, card: SessionStatusCard, since: int | None) -> SessionStatusCard:
    """The card with the session's ``stateVersion`` and, asked ``changesSince``, its ``stateChanges``,
    shown at the end of ``statusText`` too, as the release shows them (docs/contract.md §10)."""
    if since is None:
        return card.model_copy(update={"state_version": ctx.store.state.version(key)})
    found = ctx.store.state.since(key, since, state_events.READ_LIMIT)
    changes = StateChanges(
        events=found.events,
        truncated=found.truncated,
        earliest_available_sequence=found.earliest,
        history_gap=found.gap,
    )
    shown = {"stateVersion": found.version, "stateChanges": changes.wire()}
    block = f"Session state changes:\n```json\n{json.dumps(shown, indent=2, ensure_ascii=False)}\n```"
    return card.model_copy(
        update={
            "state_version": found.version,
            "state_changes": changes,
            "status_text": f"{card.status_text}\n\n{block}",
        }
    )


# --- the model -----------------------------------------------------------------------------------------


def _set_model(ctx: ToolContext, key: str, entry: SessionEntry | None, wanted: str) -> SessionEntry:
    """The session's model set (``default``, or the agent's own model: the override cleared). The session
    is made if it was not yet, as the release does."""
    config, store = ctx.config, ctx.store
    agent_model = config.model_of(session_keys.parse(key).agent_id)
    override = None if wanted.lower() == "default" else _configured(config, agent_model, wanted)
    if override == agent_model:
        override = None
    if entry is None:
        store.sessions.create(new_entry(config, key, store.clock.now_ms()))
        entry = store.sessions.get(key)
        assert entry is not None
    return store.sessions.patch(entry, SessionPatch({"model": override})) or entry


def _configured(config: Config, agent_model: str, wanted: str) -> str:
    """``<provider>/<model>`` as configured; a bare model id is one of the agent's model's provider."""
    ref = wanted if "/" in wanted else f"{agent_model.partition('/')[0]}/{wanted}"
    if ref not in config.models.refs():
        raise ToolError(f"unknown model: {wanted} (configured: {', '.join(config.models.refs())})")
    return ref


# --- the card ------------------------------------------------------------------------------------------


def _card(ctx: ToolContext, key: str, entry: SessionEntry | None, *, model_asked: bool) -> SessionStatusCard:
    config, store = ctx.config, ctx.store
    now = store.clock.now_ms()
    # A session not used yet is shown as it would start; the release names a missing main session "main".
    shown = entry or new_entry(config, key, now)
    main = key == ctx.main_key_of(key)
    session_key = config.session.main_key if entry is None and main else key
    model_ref = shown.model or config.model_of(shown.agent_id)
    provider, _, model_id = model_ref.partition("/")
    lane = store.runs.lane(key)
    head = store.runs.get(lane[0]) if lane else None
    running = 1 if head is not None and head.status.value == "running" else 0
    # A run kept from its model (``model capacity``), running or parked until its turn.
    held = head.waiting_for if head is not None else None
    mode = queueing.mode_for(config, shown, shown.last_channel, None)
    route = _route(key, shown)
    facts = _facts(
        ctx, session_key, shown, entry is not None, now, queued=len(lane) - running, mode=mode, held=held
    )
    latest = store.runs.latest(key)
    budget = _budget(ctx, shown.agent_id, now)
    return SessionStatusCard(
        session_key=session_key,
        agent_id=shown.agent_id,
        changed_model=model_asked,
        model=model_id if model_asked else None,
        model_provider=provider if model_asked else None,
        model_override=shown.model if model_asked else None,
        status_text=render(facts),
        origin=route.get("origin"),
        delivery_context=shown.delivery_context if "deliveryContext" in route else None,
        model_ref=model_ref,
        model_source="session" if shown.model else "agent",
        thinking=shown.thinking_level,
        total_tokens=shown.total_tokens,
        estimated_cost_usd=shown.estimated_cost_usd,
        runs_queued=len(lane) - running,
        runs_running=running,
        queue_mode=mode,
        queue_mode_source=_mode_source(config, shown),
        children_pending=shown.pending_children or 0,
        state=_state(shown, running, latest.status.value if latest else None, held),
        last_run_status=latest.status.value if latest else None,
        last_run_chain=_chain_of(latest) if latest else None,
        spawn_depth=shown.spawn_depth or 0,
        role=shown.role,
        spent_usd=budget.spent_usd,
        spent_tokens=budget.spent_tokens,
        budget=StatusBudget(
            daily_usd=budget.daily_usd,
            daily_tokens=budget.daily_tokens,
            left_usd=budget.left_usd,
            left_tokens=budget.left_tokens,
            source=budget.source,
        ),
    )


def _chain_of(run: Run) -> RunChain:
    chain = chains.of_run(run)
    return RunChain(chain_id=chain.chain_id, hops=chain.hops, path=list(chain.path))


def _budget(ctx: ToolContext, agent_id: str, now: int) -> AgentBudget:
    """The agent's spend today and its budget in force (an owner's runtime one over the configuration's)."""
    spent = ctx.store.budgets.spent([agent_id], day_of(now))[agent_id]
    return agent_budget(ctx.config, agent_id, spent, ctx.store.budgets.override(agent_id))


def _state(entry: SessionEntry, running: int, last: str | None, held: str | None = None) -> str:
    if entry.waiting is not None:
        return f"waiting for {entry.pending_children or 0} children"
    if held:
        return f"waiting for {held}"
    if running:
        return "running"
    return f"idle (last run {last})" if last else "idle"


def _mode_source(config: Config, entry: SessionEntry) -> Literal["session", "channel", "default"]:
    if entry.queue_mode:
        return "session"
    return "channel" if entry.last_channel in config.messages.queue.by_channel else "default"


def _facts(
    ctx: ToolContext,
    session_key: str,
    entry: SessionEntry,
    stored: bool,
    now: int,
    *,
    queued: int,
    mode: str,
    held: str | None = None,
) -> CardFacts:
    config, store = ctx.config, ctx.store
    model_ref = entry.model or config.model_of(entry.agent_id)
    # Its children as the release's sub-agent registry has them: those deleted at their cleanup too.
    children = [child for child in tree(store, entry.key) if child.entry.spawned_by == entry.key]
    return CardFacts(
        version=_version(),
        now_ms=now,
        session_key=session_key,
        model_ref=model_ref,
        config_model_ref=config.model_of(entry.agent_id),
        pinned=entry.model is not None,
        context_window=config.context_window(model_ref) or DEFAULT_CONTEXT_WINDOW,
        thinking=entry.thinking_level or "off",
        queue_mode=mode,
        queue_depth=queued,
        execution=_execution(config, entry.key),
        uptime=_uptime(),
        auth=_auth(config, model_ref),
        input_tokens=entry.input_tokens,
        output_tokens=entry.output_tokens,
        cost_usd=_cost(config, model_ref, entry),
        context_tokens=entry.context_tokens,
        started_at=entry.created_at if stored else None,
        updated_at=entry.updated_at,
        subagents_line=subagents_line(children, now),
        tasks_line=tasks_line(_card_tasks(ctx, entry), now),
        route=_route(entry.key, entry),
        waiting_for=held,
    )


def _card_tasks(ctx: ToolContext, entry: SessionEntry) -> list[CardTask]:
    """The tasks the release's card counts: those of the session (spawned by it, or its own spawn) that
    the caller owns, as its task registry has them. The caller owns its spawns and its follow-ups (its
    ``sessions_send`` runs into a child it spawned), so its own card counts its children's, a deleted
    one's included, and the card of a child of its counts that child's; any other card counts none."""
    store, caller = ctx.store, ctx.caller_key
    if entry.key == caller:
        mine = [child for child in tree(store, caller, lapsed_rows=True) if child.entry.spawned_by == caller]
    elif entry.spawned_by == caller and entry.spawn_flow_id:
        mine = [observe(store, entry)]
    else:
        return []
    spawns = [spawn_card_task(child) for child in mine if child.flow is not None]
    return [*spawns, *(follow_up_card_task(each) for each in follow_ups(store.runs, mine))]


def _route(key: str, entry: SessionEntry) -> dict[str, Any]:
    """A channel session's route, as the release shows it: the channel its key names, and where its
    replies go (left out when it has none)."""
    route: dict[str, Any] = {}
    channel = session_keys.channel_of(key)
    if channel:
        route["origin"] = {"provider": channel}
    if entry.delivery_context is not None and not entry.delivery_context.is_empty():
        route["deliveryContext"] = entry.delivery_context.wire()
    return route


def _execution(config: Config, key: str) -> str:
    """``direct``: clawbus runs no tool in a container; a sandbox setting only narrows what the session's
    tools may see (``sandboxed``)."""
    agent_id = session_keys.parse(key).agent_id
    mode = config.sandbox_mode(agent_id)
    if mode == "off":
        return "direct"
    return f"direct · sandbox {mode}" + (
        " (this session)" if subagents.sandboxed(config, agent_id, key) else ""
    )


def _auth(config: Config, model_ref: str) -> str | None:
    """How the model's provider is reached: an API key from the environment variable its configuration
    names. Nothing is said of a provider with none (the built-in echo and script ones, a local server)."""
    try:
        provider, _ = config.provider(model_ref)
    except UnknownModel:
        return None
    if isinstance(provider, OpenAIProvider) and provider.api_key_env:
        return f"api-key (env: {provider.api_key_env})"
    return None


def _cost(config: Config, model_ref: str, entry: SessionEntry) -> float | None:
    """What the session's usage cost, as recorded, else as its model's configured price says."""
    if entry.estimated_cost_usd is not None:
        return entry.estimated_cost_usd
    if entry.input_tokens is None and entry.output_tokens is None:
        return None
    try:
        provider, model_id = config.provider(model_ref)
    except UnknownModel:
        return None
    if not isinstance(provider, OpenAIProvider):
        return None
    return provider.model(model_id).cost_usd(entry.input_tokens or 0, entry.output_tokens or 0)


def _version() -> str:
    try:
        return metadata.version("clawbus")
    except metadata.PackageNotFoundError:
        return "unknown"


def _uptime() -> str | None:
    """``process 3m 2s · system 2h 5m``: how long the process answering (an API server or a worker: clawbus
    has no single gateway process) and its machine have been up. None where /proc cannot say."""
    try:
        with open("/proc/uptime", encoding="ascii") as source:
            system_s = float(source.read().split()[0])
        with open("/proc/self/stat", encoding="ascii") as source:
            # The process's start, in clock ticks after boot: the 22nd field, the 20th after the name.
            started_ticks = int(source.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    process_s = max(system_s - started_ticks / os.sysconf("SC_CLK_TCK"), 0)
    return f"process {_spaced(process_s * 1000)} · system {_spaced(system_s * 1000)}"


def _spaced(ms: float) -> str:
    return compact_duration(ms, spaced=True) or "0s"
