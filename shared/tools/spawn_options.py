"""sessions_spawn options of OpenClaw 2026.9.6 that clawbus checks before a spawn (docs/contract.md §6).

The release's schema offers options clawbus has nothing to honour them with (ACP harnesses, dashboard
sessions, managed worktrees, cloud placement, swarm collectors). Ignoring one would start a child that is
not what was asked for, so each is refused by name, with why, whenever its value would change what
happens; a value that asks for what clawbus does anyway (``runtime: "subagent"``, ``visible: false``,
``placement: {kind: "local"}``) passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clawbus.shared.wire.spawn_schema import SessionsSpawnParams

# The release's taskName rule and its reserved targets (``subagents``' ``last`` and ``all``).
TASK_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
RESERVED_TASK_NAMES = frozenset({"last", "all"})


def task_name_refusal(task_name: str | None) -> str | None:
    """The release's complaint about a ``taskName``, or None when it is absent or fine."""
    if task_name is None:
        return None
    if not TASK_NAME.fullmatch(task_name):
        return f'Invalid taskName "{task_name}". Use 1-64 chars matching [a-z][a-z0-9_-]*.'
    if task_name in RESERVED_TASK_NAMES:
        return f'Invalid taskName "{task_name}". Reserved subagent targets cannot be used as taskName values.'
    return None


def _flag(name: str) -> Callable[[Any], str | None]:
    """A flag the release reads as ``=== true``: only ``true`` asks for anything."""
    return lambda value: f"{name}=true" if value is True else None


def _text(name: str) -> Callable[[Any], str | None]:
    """A text the release reads leniently: a blank one, or no string, is absent."""
    return lambda value: name if isinstance(value, str) and value.strip() else None


def _runtime(value: Any) -> str | None:
    # The release runs anything but "acp" as a native sub-agent, which is what clawbus runs.
    return "runtime=acp" if value == "acp" else None


def _placement(value: Any) -> str | None:
    return None if value is None or value == {"kind": "local"} else "placement"


def _present(name: str) -> Callable[[Any], str | None]:
    return lambda value: None if value is None else name


def _fast_mode(value: Any) -> str | None:
    # Off is the only speed clawbus's runtimes have.
    return f"fastMode={str(value).lower()}" if value is True or value == "auto" else None


@dataclass(frozen=True, slots=True)
class _Refused:
    field: str  # the attribute of SessionsSpawnParams
    named: Callable[[Any], str | None]  # how a value that changes behaviour is named, else None
    why: str


_VISIBLE_ONLY = "it has no dashboard sessions, so no visible-session options (a child is a hidden sub-agent)"
_SWARM = "it has no swarm collectors; a child reports back when it ends (or not: expectsCompletionMessage)"
_REFUSED: tuple[_Refused, ...] = (
    _Refused(
        "runtime", _runtime, "it runs no ACP harnesses; a child runs on its agent's model (runtime=subagent)"
    ),
    _Refused("visible", _flag("visible"), "it has no dashboard sessions; a child is a hidden sub-agent"),
    _Refused("group", _text("group"), _VISIBLE_ONLY),
    _Refused("project_id", _text("projectId"), _VISIBLE_ONLY),
    _Refused("project_git_url", _text("projectGitUrl"), _VISIBLE_ONLY),
    _Refused("worktree", _flag("worktree"), "it provisions no managed git worktrees"),
    _Refused("worktree_name", _text("worktreeName"), "it provisions no managed git worktrees"),
    _Refused("worktree_base_ref", _text("worktreeBaseRef"), "it provisions no managed git worktrees"),
    _Refused(
        "placement",
        _placement,
        "a child runs on the fleet's own workers, never on a cloud profile (omit placement or use "
        '{kind: "local"})',
    ),
    _Refused("collect", _flag("collect"), _SWARM),
    _Refused("output_schema", _present("outputSchema"), _SWARM),
    _Refused("group_id", _text("groupId"), _SWARM),
    _Refused("fast_mode", _fast_mode, "its runtimes have no fast mode"),
)


def refusal(params: SessionsSpawnParams) -> str | None:
    """The first option asked for that clawbus cannot honour, named, with why; None when there is none."""
    for option in _REFUSED:
        named = option.named(getattr(params, option.field))
        if named is not None:
            return f"{named} is not supported by clawbus: {option.why}"
    return None


def cwd_refusal(cwd: Any, workspace: Path) -> str | None:
    """A working directory other than the child's workspace: clawbus runs a child's tools nowhere else.
    The workspace itself (as the release falls back to it) changes nothing and passes."""
    if not isinstance(cwd, str) or not cwd.strip():
        return None
    if Path(cwd.strip()).expanduser().resolve() == workspace.expanduser().resolve():
        return None
    return (
        f"cwd is not supported by clawbus: a child works in its agent's workspace ({workspace}), the only "
        "directory it has"
    )


def completion_target_refusal(params: SessionsSpawnParams, mode: str) -> str | None:
    """``completionTarget: "parent"`` is a private turn on a one-shot report: the release's rule."""
    if params.completion_target != "parent":
        return None
    if params.thread or mode != "run" or not params.expects_completion_message:
        return (
            'sessions_spawn completionTarget="parent" requires mode="run", thread=false, collect=false, and '
            "completion notifications enabled."
        )
    return None
