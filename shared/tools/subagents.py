"""subagents (docs/contract.md, "Orchestration"): a session's sub-agents, and control over them: list
(with their own, recursively), kill a subtree, steer a running one, info on one.

``list``, ``wait`` and ``cancel`` answer as OpenClaw 2026.9.6's do (``shared.tools.subagents_view``; list
then adds clawbus's own rows); ``kill``, ``steer`` and ``info`` are clawbus's own actions; any other action
is ``Unsupported action.``.
"""

from __future__ import annotations

import time

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.domain.redaction import scrub
from clawbus.shared.domain.runs import CancelOutcome, new_run
from clawbus.shared.flows import run_control
from clawbus.shared.intake.submit import submit
from clawbus.shared.ports.storage import Storage
from clawbus.shared.tools import subagent_targets
from clawbus.shared.tools.subagents_view import (
    descendants,
    follow_ups,
    list_text,
    listed_tasks,
    run_rows,
    status,
    task_row,
    tree,
)
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Provenance, SessionEntry, ToolFailure
from clawbus.shared.wire.subagents_schema import (
    OWN_ACTIONS,
    SubagentInfo,
    SubagentRow,
    SubagentsKilled,
    SubagentsList,
    SubagentsParams,
    SubagentSteered,
    SubagentsWaited,
    TaskCancelled,
)

Answer = (
    SubagentsList
    | SubagentsWaited
    | TaskCancelled
    | SubagentsKilled
    | SubagentSteered
    | SubagentInfo
    | ToolFailure
)
# How often a wait looks at its tasks again, and how long one waits unless told.
WAIT_POLL_SECONDS = 0.25
DEFAULT_WAIT_SECONDS = 30
UNSUPPORTED = "Unsupported action."
OUTSIDE = "Task outside session tree."
# The release's reason when a task is cancelled (its task registry's, for the operator's cancel).
CANCEL_REASON = "Cancelled by operator."


def subagents(ctx: ToolContext, params: SubagentsParams) -> Answer:
    try:
        if params.action == "list":
            return _list(ctx, params)
        if params.action == "wait":
            return _wait(ctx, params)
        if params.action == "cancel":
            assert params.task_id is not None
            return _cancel(ctx, params.task_id)
        if params.action not in OWN_ACTIONS:
            return ToolFailure(status="error", error=UNSUPPORTED)
        assert params.target is not None
        if params.action == "kill":
            return _kill(ctx, params.target)
        if params.action == "steer":
            assert params.message is not None
            return _steer(ctx, _target(ctx, params.target), params.message)
        return _info(ctx.store, _target(ctx, params.target))
    except ToolError as exc:
        return ToolFailure(status="forbidden" if exc.status == "forbidden" else "error", error=exc.error)


def _list(ctx: ToolContext, params: SubagentsParams) -> SubagentsList:
    """The release's view (its tasks cover the whole tree, its rows the direct children; both hold the
    children deleted at their cleanup while they are kept), then clawbus's rows of the sessions there (the
    whole tree only with ``recursive``)."""
    store, caller = ctx.store, ctx.caller_key
    now = store.clock.now_ms()
    with_tasks = tree(store, caller, lapsed_rows=True)
    everyone = [child for child in with_tasks if child.shown]
    children = [child for child in everyone if child.entry.spawned_by == caller]
    cutoff = now - params.window_minutes * 60_000
    tasks = listed_tasks(with_tasks, follow_ups(store.runs, with_tasks), cutoff)
    view = run_rows(ctx.config, everyone, caller, now, cutoff)
    own_rows = [child for child in (everyone if params.recursive else children) if not child.gone]
    return SubagentsList(
        requester_session_key=caller,
        caller_session_key=caller,
        caller_is_subagent=session_keys.is_subagent(caller),
        total=len(children),
        task_total=len(tasks),
        tasks=tasks,
        active=view.active,
        recent=view.recent,
        text=list_text(view, params.window_minutes),
        count=len(own_rows),
        subagents=[row(store, child.entry) for child in own_rows],
    )


def _wait(ctx: ToolContext, params: SubagentsParams) -> SubagentsWaited:
    """Until one of the tasks ends (or is no task of this tree), at most ``timeoutSeconds``; it never cancels
    anything, and the report of a task that ends is delivered as ever."""
    wanted = list(dict.fromkeys(params.task_ids or []))
    limit = DEFAULT_WAIT_SECONDS if params.timeout_seconds is None else params.timeout_seconds
    deadline = time.monotonic() + limit
    while True:
        tasks = {
            child.flow.flow_id: child for child in tree(ctx.store, ctx.caller_key) if child.flow is not None
        }
        seen = [tasks[task_id] for task_id in wanted if task_id in tasks]
        unavailable = [task_id for task_id in wanted if task_id not in tasks]
        completed = [child.flow.flow_id for child in seen if child.ended and child.flow is not None]
        reason = "unavailable" if unavailable else "completed" if completed else None
        if reason is None and time.monotonic() >= deadline:
            reason = "timeout"
        if reason is not None:
            return SubagentsWaited(
                reason=reason,
                tasks=[task_row(child) for child in seen],
                completed=completed,
                attention=[],
                unavailable=unavailable or None,
            )
        time.sleep(WAIT_POLL_SECONDS)


def _cancel(ctx: ToolContext, task_id: str) -> TaskCancelled | ToolFailure:
    """Stop a task of this session's tree: a spawn (its sub-agent and everything that one spawned), or a
    follow-up (the run a spawner's ``sessions_send`` started in its child: that run alone, as the release
    aborts the follow-up's gateway run)."""
    found = next(
        (
            child
            for child in tree(ctx.store, ctx.caller_key)
            if child.flow is not None and child.flow.flow_id == task_id
        ),
        None,
    )
    if found is None:
        return _cancel_follow_up(ctx, task_id)
    if found.ended:
        return _terminal(task_id)
    run_control.kill_tree(ctx, [found.entry.key])
    return TaskCancelled(status="cancelled", task_id=task_id, found=True, cancelled=True)


def _cancel_follow_up(ctx: ToolContext, task_id: str) -> TaskCancelled | ToolFailure:
    """A follow-up among those ``list`` shows (the release's task registry keeps them while it keeps the
    child's tasks): its run ends ``aborted`` with the release's reason, ``Cancelled by operator.``, and the
    child's next run starts; the child itself goes on."""
    store = ctx.store
    listed = follow_ups(store.runs, tree(store, ctx.caller_key, lapsed_rows=True))
    follow = next((each for each in listed if each.run.run_id == task_id), None)
    if follow is None:
        return ToolFailure(status="forbidden", error=OUTSIDE)
    if follow.run.status.terminal:
        return _terminal(task_id)
    cancelled = run_control.cancel_run(ctx, task_id, CANCEL_REASON)
    if cancelled.outcome not in (CancelOutcome.ABORTED, CancelOutcome.CANCELLING):
        # It ended (or went) between the look and the cancel.
        return _terminal(task_id)
    return TaskCancelled(status="cancelled", task_id=task_id, found=True, cancelled=True)


def _terminal(task_id: str) -> TaskCancelled:
    return TaskCancelled(
        status="error", task_id=task_id, found=True, cancelled=False, reason="Task is already terminal."
    )


def row(store: Storage, entry: SessionEntry) -> SubagentRow:
    now = store.clock.now_ms()
    current = status(store.runs, entry)
    flow = store.flows.get(entry.spawn_flow_id) if entry.spawn_flow_id else None
    ended = current in ("done", "error", "timeout", "killed")
    return SubagentRow(
        key=entry.key,
        label=entry.label,
        agent_id=entry.agent_id,
        depth=entry.spawn_depth or 1,
        role=entry.role,
        spawned_by=entry.spawned_by or "",
        status=current,
        # A killed session's time ends at its kill (one killed while it waited had no run to end then).
        runtime_ms=max((entry.killed_at or (entry.updated_at if ended else now)) - entry.created_at, 0),
        total_tokens=entry.total_tokens,
        estimated_cost_usd=entry.estimated_cost_usd,
        # A fire-and-forget child owes no report.
        pending_report=flow is not None and flow.expects_completion_message and flow.status != "done",
        waiting_for=entry.pending_children if current == "waiting" else None,
    )


def _target(ctx: ToolContext, target: str) -> SessionEntry:
    """One of the caller's sub-agents (at any depth), by session key, or a direct child's label or
    ``taskName``."""
    wanted = target.strip()
    for entry in descendants(ctx.store, ctx.caller_key, recursive=True):
        if entry.key == wanted or (entry.spawned_by == ctx.caller_key and entry.label == wanted):
            return entry
    named = _by_task_name(ctx, wanted)
    if named is not None:
        return named
    raise ToolError(
        f"No sub-agent of this session matches {wanted!r} (a child session key, label or taskName)"
    )


def _by_task_name(ctx: ToolContext, wanted: str) -> SessionEntry | None:
    """The direct child spawned with ``taskName`` ``wanted``, among those active or ended recently (the
    release's target window: a stale child with a reused handle makes nothing ambiguous); a handle two
    of them share names none, rather than the wrong one to kill or steer."""
    lowered = wanted.lower()
    found = [child.entry for child in subagent_targets.children(ctx).numbered if child.task_name == lowered]
    if len(found) > 1:
        raise ToolError(f"Ambiguous subagent taskName: {wanted} (use the child's session key)")
    return found[0] if found else None


def _kill(ctx: ToolContext, target: str) -> SubagentsKilled:
    if target.strip().lower() == "all":
        roots = ctx.store.sessions.children(ctx.caller_key)
    else:
        roots = [_target(ctx, target).key]
    return SubagentsKilled(killed=run_control.kill_tree(ctx, roots))


def _steer(ctx: ToolContext, child: SessionEntry, message: str) -> SubagentSteered:
    """A ``steer`` run in the child's lane: the child's running run takes it in at its next model step,
    else it runs when its turn comes."""
    if child.killed_at is not None:
        raise ToolError(f"{child.key} was killed: there is no one to steer", "forbidden")
    running = status(ctx.store.runs, child) == "running"
    run_id = ctx.new_run_id()
    provenance = Provenance(
        kind="inter_session",
        source_session_key=ctx.caller_key,
        source_tool="subagents",
        source_run_id=ctx.origin_run_id,
    )
    now = ctx.store.clock.now_ms()
    submit(
        ctx.store.runs,
        ctx.dispatcher,
        child,
        {},
        new_run(child, "steer", message, run_id=run_id, now=now, provenance=provenance),
    )
    return SubagentSteered(target=child.key, run_id=run_id, delivered="next_step" if running else "new_run")


def _info(store: Storage, child: SessionEntry) -> SubagentInfo:
    flow = store.flows.get(child.spawn_flow_id) if child.spawn_flow_id else None
    last_id = (flow.last_run_id or flow.flow_id) if flow else None
    last = store.runs.get(last_id) if last_id else None
    return SubagentInfo(
        subagent=row(store, child),
        created_at=child.created_at,
        updated_at=child.updated_at,
        last_run_id=last_id,
        last_run_status=last.status.value if last else None,
        last_error=scrub(last.error) if last else None,
    )
