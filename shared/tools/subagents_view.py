"""A session's sub-agents as OpenClaw 2026.9.6 shows them: ``subagents`` list's tasks, its active and
recent rows and their text, and ``session_status``'s Subagents and Tasks lines (docs/contract.md §10).

The release keeps a registry of sub-agent runs and of tasks; clawbus has the same facts elsewhere. A
child's "task" is its spawn: the spawn's flow (whose id, its first run's id, is the task id), the child's
first run, and its latest one (an orchestrator's run on its children's reports). Its session entry holds
its label, model, status and tokens. A child its cleanup deleted is still there for a while, from what its
spawner keeps of it (``Storage.sessions.departed``); and each run its spawner's ``sessions_send`` started
in it is a task of its own (``FollowUp``, the release's ``cli`` tasks).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

from clawbus.shared.config import Config
from clawbus.shared.domain.redaction import scrub
from clawbus.shared.domain.sessions import Departed
from clawbus.shared.ports.storage import Storage
from clawbus.shared.ports.storage.runs import Runs
from clawbus.shared.ports.storage.sessions import Sessions
from clawbus.shared.tools.status_card import compact_duration, short_tokens
from clawbus.shared.wire.models import Flow, Message, Run, RunStatus, SessionEntry
from clawbus.shared.wire.subagents_schema import ChildStatus, Execution, RunRow, TaskRow, TaskStatus

_ENDED: dict[str, ChildStatus] = {"done": "done", "failed": "error", "timeout": "timeout", "killed": "killed"}
# How the release words a child's state in a row (one waiting for its children has a run that ended).
_SHOWN: dict[ChildStatus, str] = {
    "queued": "queued",
    "running": "running",
    "waiting": "done",
    "done": "done",
    "error": "failed",
    "timeout": "timeout",
    "killed": "killed",
}
_TASK_STATUS: dict[ChildStatus, TaskStatus] = {
    "queued": "queued",
    "running": "running",
    "waiting": "running",
    "done": "completed",
    "error": "failed",
    "timeout": "timed_out",
    "killed": "cancelled",
}
# The task registry's own words for an ended task, in the card's Tasks line.
_TASK_WORD = {"completed": "succeeded", "timed_out": "timed out"}
# A finished task stays in the card's Tasks line this long (the release's recent window).
_TASK_RECENT_MS = 300_000
# A follow-up task's status, and its terminalSummary, by its run's: the release's task registry words for
# its gateway run's outcome (a cancel is its "cancellation", summed up as "aborted", as a timeout is).
_FOLLOW_UP_STATUS: dict[RunStatus, TaskStatus] = {
    RunStatus.QUEUED: "running",
    RunStatus.RUNNING: "running",
    RunStatus.OK: "completed",
    RunStatus.ERROR: "failed",
    RunStatus.TIMEOUT: "timed_out",
    RunStatus.ABORTED: "cancelled",
}
_FOLLOW_UP_SUMMARY: dict[RunStatus, str] = {
    RunStatus.OK: "completed",
    RunStatus.ERROR: "failed",
    RunStatus.TIMEOUT: "aborted",
    RunStatus.ABORTED: "aborted",
}
# How many of a sub-agent's newest runs are looked at for its follow-ups: its lane runs them in order, so
# one further back ended before all of these began.
_SENDS_READ = 100
_SPACES = re.compile(r"\s+")


def descendants(store: Storage, parent_key: str, recursive: bool) -> Iterator[SessionEntry]:
    """The sessions ``parent_key`` spawned (and theirs, with ``recursive``), parents before children."""
    frontier = [parent_key]
    while frontier:
        for child in _spawned(store.sessions, frontier.pop(0)):
            yield child
            if recursive:
                frontier.append(child.key)


def _spawned(sessions: Sessions, parent_key: str) -> list[SessionEntry]:
    """The sessions ``parent_key`` spawned that are there, the oldest first."""
    children = [e for e in sessions.get_many(sessions.children(parent_key)) if e]
    return sorted(children, key=lambda e: e.created_at)


def status(runs: Runs, entry: SessionEntry) -> ChildStatus:
    """What a sub-agent is doing: ended (how), waiting for its own children, running, or queued (its run
    waits for its turn: the fleet's maxConcurrent, a busy worker pool)."""
    if entry.status in _ENDED:
        return _ENDED[entry.status]
    if entry.waiting is not None:
        return "waiting"
    lane = runs.lane(entry.key)
    head = runs.get(lane[0]) if lane else None
    if head is None:
        return "waiting" if entry.pending_children else "running"
    return "running" if head.status.value == "running" else "queued"


@dataclass(frozen=True, slots=True)
class Child:
    """One sub-agent and its spawn, as read once for every view of it."""

    entry: SessionEntry
    status: ChildStatus
    flow: Flow | None
    first: Run | None
    latest: Run | None
    # Deleted at its cleanup: ``entry`` is as it was then, and its newest runs' ids are ``run_ids``; once
    # its row lapsed (not ``shown``), only its tasks are still listed.
    gone: bool = False
    run_ids: tuple[str, ...] = ()
    shown: bool = True

    @property
    def ended(self) -> bool:
        return self.status in ("done", "error", "timeout", "killed")

    @property
    def pending(self) -> int:
        """Its children still to report (a killed one waits for none)."""
        return 0 if self.entry.killed_at is not None else self.entry.pending_children or 0

    @property
    def yielded(self) -> bool:
        return self.entry.waiting is not None and not self.ended

    @property
    def started_at(self) -> int | None:
        return self.first.started_at if self.first else None

    @property
    def ended_at(self) -> int | None:
        """When it ended: its kill, else its latest run's end (an orchestrator ends with its latest run)."""
        if not self.ended:
            return None
        latest_end = self.latest.ended_at if self.latest else None
        return self.entry.killed_at or latest_end or self.entry.updated_at

    @property
    def task(self) -> str:
        return (self.flow.task or self.flow.message).strip() if self.flow else ""

    @property
    def label(self) -> str:
        return (self.entry.label or "").strip() or self.task or "subagent"

    @property
    def task_name(self) -> str | None:
        """The handle its spawn named it by (``taskName``), to target it by."""
        return self.flow.task_name if self.flow else None

    def runtime_ms(self, now: int) -> int:
        if self.started_at is None:
            return 0
        return max((self.ended_at or now) - self.started_at, 0)

    def execution(self) -> Execution:
        if self.yielded:
            return Execution(state="waiting")
        if self.status in ("queued", "running"):
            return Execution(state=self.status)
        return Execution(state="finished")


def observe(store: Storage, entry: SessionEntry) -> Child:
    flow = store.flows.get(entry.spawn_flow_id) if entry.spawn_flow_id else None
    first = store.runs.get(flow.flow_id) if flow else None
    latest = store.runs.get(flow.last_run_id) if flow and flow.last_run_id else first
    return Child(entry, status(store.runs, entry), flow, first, latest)


def _observe_departed(store: Storage, departed: Departed, now: int) -> Child:
    child = observe(store, departed.entry)
    return replace(child, gone=True, run_ids=departed.run_ids, shown=departed.shown_until > now)


def tree(store: Storage, parent_key: str, *, lapsed_rows: bool = False) -> list[Child]:
    """Every sub-agent below ``parent_key``, parents first: those there, and those their cleanup deleted
    whose rows their spawner still keeps (the release's registry still holds their runs); with
    ``lapsed_rows``, also those whose rows lapsed but whose tasks are still listed (its task registry keeps
    them longer)."""
    now = store.clock.now_ms()
    found: list[Child] = []
    frontier = [parent_key]
    while frontier:
        parent = frontier.pop(0)
        there = [observe(store, entry) for entry in _spawned(store.sessions, parent)]
        keys = {child.entry.key for child in there}
        # A deletion cut short leaves the session there, and it is shown as it is.
        gone = [
            _observe_departed(store, departed, now)
            for departed in store.sessions.departed(parent, now)
            if departed.entry.key not in keys
        ]
        for child in sorted([*there, *gone], key=lambda child: child.entry.created_at):
            if child.shown or lapsed_rows:
                found.append(child)
                frontier.append(child.entry.key)
    return found


# --- subagents list: tasks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A run ``sessions_send`` started in a sub-agent from the session that spawned it (its primary run;
    the exchange's later steps are clawbus's own): the release tracks each as a task of its own, of
    runtime ``cli``, owned by the spawner and labelled with the child's label."""

    child: Child
    run: Run
    # The message it was sent (the task's text, a title when the child has no label).
    task: str = ""

    @property
    def updated_at(self) -> int:
        return self.run.ended_at or self.run.started_at or self.run.created_at


def follow_ups(runs: Runs, children: list[Child]) -> list[FollowUp]:
    """Every follow-up of these sub-agents: among each one's newest runs (a deleted one's, as kept)."""
    there = [child for child in children if not child.gone]
    sends = runs.accepted([child.entry.key for child in there], "send", _SENDS_READ)
    candidates = [
        *((child, run_id) for child, found in zip(there, sends, strict=True) for run_id in found),
        *((child, run_id) for child in children if child.gone for run_id in child.run_ids),
    ]
    run_ids = [run_id for _, run_id in candidates]
    found, inputs = runs.get_many(run_ids), runs.inputs(run_ids)
    return [
        FollowUp(child, run, message.text.strip() if message is not None else "")
        for (child, _), run, message in zip(candidates, found, inputs, strict=True)
        if run is not None and run.kind == "send" and _from_spawner(child.entry, message)
    ]


def _from_spawner(entry: SessionEntry, message: Message | None) -> bool:
    """The release's test for a follow-up: the run's message came by ``sessions_send`` from the session
    that spawned the child (another session's send to it is no task)."""
    provenance = message.provenance if message is not None else None
    return (
        provenance is not None
        and provenance.kind == "inter_session"
        and provenance.source_tool == "sessions_send"
        and provenance.source_session_key == entry.spawned_by
    )


def listed_tasks(children: list[Child], follow: list[FollowUp], cutoff: int) -> list[TaskRow]:
    """The tree's spawns and follow-ups still under way or updated since ``cutoff``, the latest updated
    first."""
    spawns = [
        (child.entry.updated_at, task_row(child))
        for child in children
        if child.flow is not None and (not child.ended or child.entry.updated_at >= cutoff)
    ]
    sends = [
        (each.updated_at, follow_up_row(each))
        for each in follow
        if not each.run.status.terminal or each.updated_at >= cutoff
    ]
    return [row for _, row in sorted([*spawns, *sends], key=lambda pair: pair[0], reverse=True)]


def task_row(child: Child) -> TaskRow:
    assert child.flow is not None
    task_status = _TASK_STATUS[child.status]
    return TaskRow(
        task_id=child.flow.flow_id,
        delivery_status=_delivery(child.flow, skipped="not_applicable"),
        execution=child.execution(),
        status=task_status,
        label=child.entry.label,
        progress_summary=_flat(child.latest.reply) if child.latest else None,
        error=_error(child) if task_status in ("failed", "timed_out", "cancelled") else None,
    )


def follow_up_row(follow: FollowUp) -> TaskRow:
    """A follow-up as the release's task registry shows it: nothing to deliver, and once ended a one-word
    summary of how (``completed``, ``failed``, ``aborted``)."""
    run = follow.run
    task_status = _FOLLOW_UP_STATUS[run.status]
    unsuccessful = task_status in ("failed", "timed_out", "cancelled")
    error = _flat(scrub(run.error)) if unsuccessful else None
    return TaskRow(
        task_id=run.run_id,
        runtime="cli",
        delivery_status="not_applicable",
        execution=Execution(state=_follow_up_state(run.status)),
        status=task_status,
        label=follow.child.entry.label,
        terminal_summary=_FOLLOW_UP_SUMMARY.get(run.status),
        error=truncate_task_text(error, 120) if error else None,
    )


def _follow_up_state(run_status: RunStatus) -> Literal["queued", "running", "finished"]:
    """Running while its run runs; queued while it waits its turn in the child's lane."""
    if run_status.terminal:
        return "finished"
    return "running" if run_status == RunStatus.RUNNING else "queued"


def _delivery(flow: Flow, *, skipped: str) -> str:
    """Its report's delivery: pending until the flow delivers it (or finds nothing to deliver); ``skipped``
    names a delivery with nothing to deliver, which a fire-and-forget child's is from its spawn on (the
    release's registry says ``not_required`` of it, its task registry ``not_applicable``)."""
    if not flow.expects_completion_message:
        return skipped
    if flow.status == "running" or flow.delivery_status in (None, "pending"):
        return "pending"
    return skipped if flow.delivery_status == "skipped" else flow.delivery_status


def _flat(text: str | None) -> str | None:
    """Text on one line, as the release writes a task's texts."""
    flat = _SPACES.sub(" ", text or "").strip()
    return flat or None


def _error(child: Child) -> str | None:
    """Why its latest run did not succeed, redacted, on one line of at most 120 characters."""
    flat = _flat(scrub(child.latest.error)) if child.latest else None
    return truncate_task_text(flat, 120) if flat else None


# --- subagents list: active and recent ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RunView:
    """The direct children still active, then those ended recently, and each one's line of the text."""

    active: list[RunRow]
    recent: list[RunRow]
    lines: list[str]


def run_rows(
    config: Config, everyone: list[Child], parent_key: str, now: int, cutoff: int, task_chars: int = 72
) -> RunView:
    """``parent_key``'s children still active (or still waiting for theirs), then those ended since
    ``cutoff``, newest start first within each, numbered on from one across both. ``everyone`` is the whole
    tree below it: a row names its child's own children. A line shows ``task_chars`` of a task (the
    ``/subagents list`` command shows more than the tool)."""
    spawned: dict[str, list[str]] = {}
    for child in everyone:
        spawned.setdefault(child.entry.spawned_by or "", []).append(child.entry.key)
    children = [child for child in everyone if child.entry.spawned_by == parent_key]
    ordered = sorted(children, key=lambda c: c.started_at or c.entry.created_at, reverse=True)
    active = [child for child in ordered if not child.ended or child.pending]
    recent = [child for child in ordered if child not in active and (child.ended_at or 0) >= cutoff]
    built = [
        _run_row(config, child, index, now, sorted(spawned.get(child.entry.key, [])), task_chars)
        for index, child in enumerate([*active, *recent], 1)
    ]
    rows = [row for row, _ in built]
    return RunView(rows[: len(active)], rows[len(active) :], [line for _, line in built])


def _run_row(
    config: Config, child: Child, index: int, now: int, its_children: list[str], task_chars: int
) -> tuple[RunRow, str]:
    entry = child.entry
    model_ref = entry.model or config.model_of(entry.agent_id)
    runtime_ms = child.runtime_ms(now)
    runtime = compact_duration(runtime_ms) or "n/a"
    label, task = truncate_line(child.label, 48), truncate_line(child.task, task_chars)
    shown = shown_status(child)
    # A deleted child's tokens went with its session, as the release reads them from its session store.
    usage = "" if child.gone else usage_text(entry)
    figures = ", ".join(part for part in (model_ref.partition("/")[2] or model_ref, runtime, usage) if part)
    # The release puts the handle first, so a coordinator reads what to target it by.
    named = f"{child.task_name}: " if child.task_name else ""
    line = f"{index}. {named}{label} ({figures}) {shown}"
    if task.lower() != label.lower():
        line += f" - {task}"
    run = child.latest or child.first
    row = RunRow(
        index=index,
        run_id=run.run_id if run else entry.spawn_flow_id or "",
        session_key=entry.key,
        task_name=child.task_name,
        label=label,
        task=task,
        status=shown,
        execution=child.execution(),
        delivery_status=_delivery(child.flow, skipped="not_required") if child.flow else None,
        pending_descendants=child.pending,
        runtime=runtime,
        runtime_ms=runtime_ms,
        child_sessions=its_children or None,
        model=model_ref,
        total_tokens=None if child.gone else entry.context_tokens or _io_total(entry) or None,
        started_at=child.started_at,
        ended_at=child.ended_at,
    )
    return row, line


def shown_status(child: Child) -> str:
    """``running``, ``done``, ...; ``waiting on 2 children`` while it yields; ``active (waiting on 1 child)``
    once its run ended with children still to report."""
    pending = child.pending
    waiting = f"waiting on {pending} {'child' if pending == 1 else 'children'}"
    if child.yielded:
        return waiting if pending else "waiting for external continuation"
    shown = _SHOWN[child.status]
    if not pending:
        return shown
    return f"active ({waiting})" if shown in ("running", "done") else f"{shown} ({waiting})"


def _io_total(entry: SessionEntry) -> int:
    return (entry.input_tokens or 0) + (entry.output_tokens or 0)


def usage_text(entry: SessionEntry) -> str:
    """``tokens 15 (in 10 / out 5)``; the prompt size when it is all there is, or when it is larger."""
    total, prompt = _io_total(entry), entry.context_tokens or _io_total(entry)
    parts = []
    if total > 0:
        shown_in, shown_out = (
            short_tokens(entry.input_tokens) or "0",
            short_tokens(entry.output_tokens) or "0",
        )
        parts.append(f"tokens {short_tokens(total)} (in {shown_in} / out {shown_out})")
    elif prompt > 0:
        parts.append(f"tokens {short_tokens(prompt)} prompt/cache")
    if total > 0 and prompt > total:
        parts.append(f"prompt/cache {short_tokens(prompt)}")
    return ", ".join(parts)


def list_text(view: RunView, recent_minutes: int) -> str:
    """``active subagents:`` and ``recent (last <N>m):``, each with its lines or ``(none)``."""
    active = len(view.active)
    return "\n".join(
        [
            "active subagents:",
            *(view.lines[:active] or ["(none)"]),
            "",
            f"recent (last {recent_minutes}m):",
            *(view.lines[active:] or ["(none)"]),
        ]
    )


def truncate_line(text: str, limit: int) -> str:
    """At most ``limit`` characters, the cut marked ``...`` (the list's rule)."""
    trimmed = text.rstrip()
    if len(trimmed) <= limit:
        return trimmed
    return f"{trimmed[: limit - 3].rstrip()}..."


def truncate_task_text(text: str, limit: int) -> str:
    """At most ``limit`` characters, the cut marked ``…`` (the task texts' rule)."""
    trimmed = text.strip()
    if len(trimmed) <= limit:
        return trimmed
    return f"{trimmed[: limit - 1].rstrip()}…"


# --- session_status: the Subagents and Tasks lines ------------------------------------------------------


def subagents_line(children: list[Child], now: int) -> str | None:
    """``🤖 Subagents: 1 active · 2 done`` and up to three active ones, while one is active."""
    active = [child for child in children if not child.ended or child.pending]
    if not active:
        return None
    done = sum(1 for child in children if child.ended and not child.pending)
    head = f"🤖 Subagents: {len(active)} active" + (f" · {done} done" if done else "")
    return "\n".join([head, *(_active_line(child, now) for child in active[:3])])


def _active_line(child: Child, now: int) -> str:
    began = child.started_at or child.entry.created_at
    until = child.ended_at if child.ended_at and not child.pending else now
    lasted = compact_duration(max(until - began, 0), spaced=True) or "0s"
    label = child.label if len(child.label) <= 56 else f"{child.label[:56].rstrip()}…"
    line = f"  • {label} · {lasted} · {_doing(child)}"
    if child.pending:
        line += f" · {child.pending} child{'' if child.pending == 1 else 'ren'} pending"
    return line


def _doing(child: Child) -> str:
    state = child.execution().state
    if state == "waiting":
        return "waiting for child tasks" if child.pending else "waiting for external work"
    return "finished · settlement pending" if state == "finished" else state


@dataclass(frozen=True, slots=True)
class CardTask:
    """A task as the card's Tasks line weighs it (a spawn's or a follow-up's)."""

    runtime: Literal["subagent", "cli"]
    status: TaskStatus
    created_at: int
    # When it ended, else when it was last heard of (the release's endedAt ?? lastEventAt ?? startedAt).
    seen_at: int
    title: str
    detail: str | None

    @property
    def active(self) -> bool:
        return self.status in ("queued", "running")


def spawn_card_task(child: Child) -> CardTask:
    task_status = _TASK_STATUS[child.status]
    return CardTask(
        runtime="subagent",
        status=task_status,
        created_at=child.entry.created_at,
        seen_at=child.ended_at or child.entry.updated_at,
        title=_title(child.entry.label or child.task),
        detail=_task_detail(child),
    )


def follow_up_card_task(follow: FollowUp) -> CardTask:
    """A follow-up's: titled with the child's label (else the message sent); its detail its progress
    while under way, then its error, else its one-word summary (``completed``)."""
    run, row = follow.run, follow_up_row(follow)
    detail = None if not run.status.terminal else row.error or row.terminal_summary
    return CardTask(
        runtime="cli",
        status=row.status,
        created_at=run.created_at,
        seen_at=follow.updated_at,
        title=_title(follow.child.entry.label or follow.task),
        detail=detail,
    )


def _title(text: str) -> str:
    return truncate_task_text(_flat(text) or "", 80) or "Background task"


def tasks_line(tasks: list[CardTask], now: int) -> str | None:
    """``📌 Tasks: latest succeeded · subagent · probe-child``: the tasks under way or ended within five
    minutes, the newest first; the one most worth a look leads (the newest under way, else the newest
    failure, else the newest ended)."""
    newest = sorted(tasks, key=lambda task: task.created_at, reverse=True)
    active = [task for task in newest if task.active]
    recent = [task for task in newest if not task.active and now - task.seen_at <= _TASK_RECENT_MS]
    failures = [task for task in recent if task.status in ("failed", "timed_out")]
    focus = next(iter(active or failures or recent), None)
    if focus is None:
        return None
    if active:
        headline = f"{len(active)} active"
    elif failures:
        headline = f"{len(failures)} recent failure{'' if len(failures) == 1 else 's'}"
    else:
        headline = f"latest {_TASK_WORD.get(focus.status, focus.status)}"
    parts = [headline, focus.runtime, focus.title, focus.detail]
    return "📌 Tasks: " + " · ".join(part for part in parts if part)


def _task_detail(child: Child) -> str | None:
    if not child.ended:
        reply = _flat(child.latest.reply) if child.latest else None
        return truncate_task_text(reply, 120) if reply else None
    return _error(child) if child.status != "done" else None
