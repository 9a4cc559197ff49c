"""subagents and session_status: their parameters and results (docs/contract.md, "Orchestration").

Kept apart from the tools' code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from clawbus_client import models as client
from pydantic import BeforeValidator, Field, model_validator

from clawbus.shared.base.tool_args import optional_text, refused, string_list, truthy, whole_number
from clawbus.shared.wire.models import (
    DeliveryContext,
    MessageText,
    Params,
    QueueMode,
    SessionRef,
    SpawnRole,
    Wire,
)

ChildStatus = Literal["queued", "running", "waiting", "done", "error", "timeout", "killed"]
# clawbus's own actions, beside the release's ``list``, ``wait`` and ``cancel``; any other action is
# ``Unsupported action.``.
OWN_ACTIONS = ("kill", "steer", "info")
RELEASE_ACTIONS = ("list", "wait", "cancel")
# subagents wait: at most this many tasks, for at most this long (the release's bounds).
MAX_WAITED_TASKS = 32
MAX_WAIT_SECONDS = 60
DEFAULT_RECENT_MINUTES = 30
MAX_RECENT_MINUTES = 1440


def _action(value: Any) -> str:
    """The release reads ``action`` as an optional text: no string, or only blanks, is ``list``; any other
    text is kept as written (trimmed), and the tool answers the ones it does not know."""
    if not isinstance(value, str) or not value.strip():
        return "list"
    return value.strip()


class SubagentsParams(Params):
    action: Annotated[str, BeforeValidator(_action)] = Field(
        "list",
        description="list (default) your sub-agents; kill one (or all) with its whole subtree; steer a "
        "running one; info on one.",
        json_schema_extra={"enum": [*RELEASE_ACTIONS, *OWN_ACTIONS]},
    )
    task_id: Annotated[str | None, optional_text] = Field(
        None, description="cancel: the task (from list's tasks)."
    )
    task_ids: Annotated[list[str] | None, string_list] = Field(
        None, description="wait: the tasks to wait for (1-32), until one ends or needs attention."
    )
    timeout_seconds: Annotated[int | None, whole_number("timeoutSeconds", least=0, high=MAX_WAIT_SECONDS)] = (
        Field(None, ge=0, description="wait: at most this long (default 30, at most 60); it never cancels.")
    )
    recent_minutes: Annotated[int | None, whole_number("recentMinutes", least=1, high=MAX_RECENT_MINUTES)] = (
        Field(None, description="list: the ended ones of the last N minutes (default 30, at most 1440).")
    )
    recursive: Annotated[bool, truthy] = Field(
        False, description="list: their sub-agents too, to the last level."
    )
    target: Annotated[SessionRef | None, optional_text] = Field(
        None, description='kill, steer, info: a child session key, label or taskName; kill also takes "all".'
    )
    message: MessageText | None = Field(None, description="steer: what to tell the sub-agent.")

    @model_validator(mode="after")
    def _needs(self) -> SubagentsParams:
        """clawbus's own actions name their target (and steer its message), in the release's words for a
        missing argument."""
        if self.action in OWN_ACTIONS and self.target is None:
            raise refused("target required")
        if self.action == "cancel" and self.task_id is None:
            raise refused("taskId required")
        if self.action == "wait" and not self.task_ids:
            raise refused("taskIds required")
        if self.action == "wait" and len(set(self.task_ids or [])) > MAX_WAITED_TASKS:
            raise refused(f"subagents wait supports at most {MAX_WAITED_TASKS} taskIds.")
        if self.action == "steer" and self.message is None:
            raise refused("message required")
        return self

    @property
    def window_minutes(self) -> int:
        return DEFAULT_RECENT_MINUTES if self.recent_minutes is None else self.recent_minutes


class SubagentRow(client.SubagentRow, Wire):
    role: SpawnRole | None = None
    status: ChildStatus


class Execution(client.Execution, Wire):
    """What a sub-agent's run is doing now, as the release observes it: ``queued``, ``running``, ``waiting``
    (it yielded, for its children) or ``finished``."""

    state: Literal["queued", "running", "waiting", "finished"]


TaskStatus = Literal["queued", "running", "completed", "failed", "timed_out", "cancelled"]


class TaskRow(client.TaskRow, Wire):
    """A task as the release's task registry shows it (``subagents`` list's ``tasks``): a spawn (runtime
    ``subagent``, one per spawned sub-agent of the tree, the task id being its spawn's flow id), or a run
    a spawner's ``sessions_send`` started in its child (runtime ``cli``, the task id being the run's)."""

    runtime: Literal["subagent", "cli"] = "subagent"
    execution: Execution
    status: TaskStatus


class RunRow(client.RunRow, Wire):
    """One direct child, its latest run, as the release's ``active`` and ``recent`` rows show it."""

    execution: Execution


class SubagentsList(client.SubagentsList, Wire):
    """The release's ``list`` result (its keys in its order), then clawbus's own rows: ``count`` and
    ``subagents`` (with ``recursive``, the whole tree), which its CLI, console and HTTP routes read."""

    status: Literal["ok"] = "ok"
    action: Literal["list"] = "list"
    tasks: list[TaskRow]
    active: list[RunRow]
    recent: list[RunRow]
    subagents: list[SubagentRow]


class SubagentsWaited(Wire):
    """``wait``: the tasks as they stood when the wait ended, and why it ended: one ``completed``, one
    ``unavailable`` (not a task of this session's tree), or the ``timeout``."""

    status: Literal["ok"] = "ok"
    action: Literal["wait"] = "wait"
    reason: Literal["completed", "attention", "unavailable", "timeout"]
    tasks: list[TaskRow]
    completed: list[str]
    attention: list[str]
    unavailable: list[str] | None = None


class TaskCancelled(Wire):
    """``cancel``: the task's sub-agent (and everything it spawned) stopped, or why not."""

    status: Literal["cancelled", "error"]
    task_id: str
    found: bool
    cancelled: bool
    reason: str | None = None


class SubagentsKilled(client.SubagentsKilled, Wire):
    action: Literal["kill"] = "kill"


class SubagentSteered(client.SubagentSteered, Wire):
    action: Literal["steer"] = "steer"
    delivered: Literal["next_step", "new_run"]


class SubagentInfo(client.SubagentInfo, Wire):
    action: Literal["info"] = "info"
    subagent: SubagentRow


def _model_arg(value: Any) -> str | None:
    """The release's model argument: a text, trimmed; anything else (or only blanks) is no change."""
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()


class SessionStatusParams(Params):
    session_key: Annotated[SessionRef | None, optional_text] = Field(
        None,
        description="The session to show (default: this one; also current). Any session you may see.",
    )
    model: Annotated[str | None, BeforeValidator(_model_arg)] = Field(
        None,
        max_length=256,
        description="Set the session's model: a configured <provider>/<model>, a model id of the agent's "
        "provider, or default (the agent's own).",
    )
    changes_since: Annotated[int | None, whole_number("changesSince", least=0)] = Field(
        None,
        description="Also list the session's state changes after this stateVersion (stateChanges), to "
        "reconcile before acting.",
    )


class StatusBudget(client.StatusBudget, Wire):
    """The card's agent's budget today (``shared.domain.budget_view``): a limit absent is no limit."""

    source: Literal["config", "runtime"] = "config"


class StateChanges(client.StateChanges, Wire):
    """``session_status``'s ``stateChanges`` (with ``changesSince``), the release's shape: the events after
    the version asked for (at most 200: ``truncated`` when more follow), each ``{sequence, kind, actorType,
    occurredAt, summary, actorId?, runId?, payload?}``; the first event still kept; ``historyGap`` when
    some asked for are no longer kept (shared/domain/state_events.py)."""


class RunChain(client.RunChain, Wire):
    """A run's chain: its id, the run's hops on it and the sessions those hops reached."""


class SessionStatusCard(client.SessionStatusCard, Wire):
    """``session_status``'s details: the release's keys in its order, then clawbus's own (docs/contract.md
    §10). ``model``, ``modelProvider`` and ``modelOverride`` are there only when a ``model`` argument was
    given, as in the release; the session's model ref is always in ``modelRef``."""

    # modelOverride is written out as null once a model argument was given (``wire``).
    ok: Literal[True] = True
    state_changes: StateChanges | None = None
    delivery_context: DeliveryContext | None = None
    # ``session``: the session's own model (a PATCH, a spawn's model, this tool); ``agent``: its agent's.
    model_source: Literal["session", "agent"]
    # What a message arriving now (on the session's last channel) does while the session is busy, and
    # whether that is the session's own mode or the configuration's (docs/contract.md §11).
    queue_mode: QueueMode
    queue_mode_source: Literal["session", "channel", "default"]
    last_run_chain: RunChain | None = None
    role: SpawnRole | None = None
    budget: StatusBudget | None = None

    def wire(self) -> dict[str, Any]:
        """Absent fields omitted, but for ``modelOverride`` once a model argument was given: the release
        writes ``null`` for an override cleared."""
        data = self.model_dump(mode="json", by_alias=True)
        if data.get("budget") is not None:
            data["budget"] = {key: value for key, value in data["budget"].items() if value is not None}
        return {
            key: value
            for key, value in data.items()
            if value is not None or (key == "modelOverride" and self.model is not None)
        }
