"""The session's sub-agents as the release's ``/subagents`` and ``/agents`` see them, and which one a
command's ``<id|#>`` names.

They are the session's own children (a command looks one level down; the ``subagents`` tool reaches the
whole tree): every one, latest started first, and those listed, numbered: the active ones, then those
ended in the last 30 minutes (``/subagents list``'s numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clawbus.shared.tools.subagents_view import Child, RunView, run_rows, tree
from clawbus.shared.tools.tool_context import ToolContext

RECENT_MINUTES = 30
# How much of a child's task a list line shows (the tool's list shows 72 characters).
LIST_TASK_CHARS = 110
_LABEL_CHARS = 72
_INDEX = re.compile(r"[0-9]+")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Children:
    # Every child, latest started first.
    latest: list[Child]
    # The list's rows and lines: active, then recent.
    view: RunView
    # The listed children, by their number (the first is 1).
    numbered: list[Child]


def children(ctx: ToolContext) -> Children:
    store = ctx.store
    now = store.clock.now_ms()
    everyone = tree(store, ctx.caller_key)
    own = [child for child in everyone if child.entry.spawned_by == ctx.caller_key]
    latest = sorted(own, key=lambda child: child.started_at or child.entry.created_at, reverse=True)
    cutoff = now - RECENT_MINUTES * 60_000
    view = run_rows(ctx.config, everyone, ctx.caller_key, now, cutoff, task_chars=LIST_TASK_CHARS)
    by_key = {child.entry.key: child for child in own}
    numbered = [by_key[row.session_key] for row in [*view.active, *view.recent]]
    return Children(latest, view, numbered)


def run_label(child: Child) -> str:
    """Its label, else its task, on one line of at most 72 characters (``formatRunLabel``)."""
    raw = _SPACES.sub(" ", child.label).strip() or "subagent"
    return raw if len(raw) <= _LABEL_CHARS else f"{raw[:_LABEL_CHARS].rstrip()}…"


def run_ids(child: Child) -> list[str]:
    """Its spawn's run id (what ``sessions_spawn`` answered) and its latest run's."""
    return [run.run_id for run in (child.first, child.latest) if run is not None]


def resolve(children: Children, token: str) -> Child | str:
    """The child ``token`` names, else the release's complaint: ``last``, a list number, a session key, a
    taskName or a label (whole, then a prefix; any case), or a prefix of a run id."""
    wanted = token.strip()
    if not wanted:
        return "⚠️ Missing subagent id."
    if wanted == "last":
        return children.latest[0] if children.latest else "⚠️ Unknown subagent."
    if _INDEX.fullmatch(wanted):
        number = int(wanted)
        listed = children.numbered
        return listed[number - 1] if 0 < number <= len(listed) else f"⚠️ Invalid subagent index: {wanted}"
    if ":" in wanted:
        found = [child for child in children.latest if child.entry.key == wanted]
        return found[0] if found else f"⚠️ Unknown subagent session: {wanted}"
    lowered = wanted.lower()
    labels = [(child, run_label(child).lower()) for child in children.latest]
    # A taskName is looked for among the listed children only (active and recent), so a stale child that
    # had the same handle makes nothing ambiguous; labels and run ids among all of them, as the release.
    names = [(child, (child.task_name or "").lower()) for child in children.numbered]
    for found, ambiguity in (
        ([child for child, name in names if name and name == lowered], "Ambiguous subagent label"),
        ([child for child, label in labels if label == lowered], "Ambiguous subagent label"),
        ([child for child, name in names if name.startswith(lowered)], "Ambiguous subagent label prefix"),
        ([child for child, label in labels if label.startswith(lowered)], "Ambiguous subagent label prefix"),
        (
            [child for child in children.latest if any(run.startswith(wanted) for run in run_ids(child))],
            "Ambiguous run id prefix",
        ),
    ):
        if len(found) > 1:
            return f"⚠️ {ambiguity}: {wanted}"
        if found:
            return found[0]
    return f"⚠️ Unknown subagent id: {wanted}"
