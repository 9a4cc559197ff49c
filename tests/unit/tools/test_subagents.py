"""shared/tools/subagents.py and subagents_view.py: subagents reads its action and recentMinutes as the
release does, and its list answers the release's keys, tasks, rows and text, then clawbus's own rows."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import ToolFailure
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.shared.wire.subagents_schema import SubagentsList
from clawbus.workers.testing import World

RELEASE_KEYS = [
    "status",
    "action",
    "requesterSessionKey",
    "callerSessionKey",
    "callerIsSubagent",
    "total",
    "taskTotal",
    "tasks",
    "active",
    "recent",
    "text",
]
TASK = "Say hi and stop."


def listing(ctx: ToolContext, **args: Any) -> SubagentsList:
    result = TOOLS["subagents"].invoke(ctx, args)
    assert isinstance(result, SubagentsList), result
    return result


def spawn(ctx: ToolContext, label: str | None = "probe-child", task: str = TASK) -> SpawnResult:
    args = {"task": task} if label is None else {"task": task, "label": label}
    spawned = TOOLS["sessions_spawn"].invoke(ctx, args)
    assert isinstance(spawned, SpawnResult), spawned
    return spawned


def start(ctx: ToolContext, child: SpawnResult, lease_ms: int = 60_000) -> None:
    """The child's run taken by a worker: it has run since now, on the store's clock. With a short lease,
    the worker is lost, and the next one to take the run (``drain``) finishes it."""
    ctx.store.runs.claim(
        child.run_id, child.child_session_key, owner="t", attempt=0, lease_ms=lease_ms, max_attempts=3
    )


def test_an_empty_list_has_the_releases_keys_in_order_then_clawbuss(ctx: ToolContext) -> None:
    wire = listing(ctx, action="list").wire()
    assert list(wire) == [*RELEASE_KEYS, "count", "subagents"]
    assert wire == {
        "status": "ok",
        "action": "list",
        "requesterSessionKey": "agent:main:main",
        "callerSessionKey": "agent:main:main",
        "callerIsSubagent": False,
        "total": 0,
        "taskTotal": 0,
        "tasks": [],
        "active": [],
        "recent": [],
        "text": "active subagents:\n(none)\n\nrecent (last 30m):\n(none)",
        "count": 0,
        "subagents": [],
    }


@pytest.mark.parametrize("args", [{}, {"action": ""}, {"action": "  "}, {"action": 5}, {"action": " list "}])
def test_no_action_a_blank_or_a_non_text_one_is_list(ctx: ToolContext, args: dict[str, Any]) -> None:
    assert listing(ctx, **args).action == "list"


@pytest.mark.parametrize("action", ["LIST", "explode", "WAIT"])
def test_any_other_action_is_unsupported_as_a_result(ctx: ToolContext, action: str) -> None:
    result = TOOLS["subagents"].invoke(ctx, {"action": action, "taskId": "t", "taskIds": ["t"]})
    assert isinstance(result, ToolFailure)
    assert result.wire() == {"status": "error", "error": "Unsupported action."}


@pytest.mark.parametrize("action", ["kill", "steer", "info"])
def test_clawbuss_own_actions_need_a_target(ctx: ToolContext, action: str) -> None:
    with pytest.raises(ValidationError, match="target required"):
        TOOLS["subagents"].invoke(ctx, {"action": action})


@pytest.mark.parametrize("minutes", [0, -1, 1.5, "abc", True])
def test_recent_minutes_must_be_a_positive_whole_number(ctx: ToolContext, minutes: object) -> None:
    with pytest.raises(ValidationError, match="recentMinutes must be a positive integer"):
        TOOLS["subagents"].invoke(ctx, {"action": "list", "recentMinutes": minutes})


@pytest.mark.parametrize(("minutes", "shown"), [("5", 5), (99_999, 1440), ("", 30), (None, 30)])
def test_recent_minutes_is_read_leniently_and_clamped(ctx: ToolContext, minutes: object, shown: int) -> None:
    assert f"recent (last {shown}m):" in listing(ctx, recentMinutes=minutes).text


def test_a_running_child_is_active_with_its_runtime_model_and_task(
    ctx: ToolContext, clock: FixedClock
) -> None:
    child = spawn(ctx)
    clock.advance(1)
    start(ctx, child)
    clock.advance(63)
    listed = listing(ctx)
    assert listed.text == (
        "active subagents:\n1. probe-child (echo, 1m3s) running - Say hi and stop.\n\n"
        "recent (last 30m):\n(none)"
    )
    [row] = listed.active
    assert row.wire() == {
        "index": 1,
        "runId": child.run_id,
        "sessionKey": child.child_session_key,
        "label": "probe-child",
        "task": TASK,
        "status": "running",
        "execution": {"state": "running"},
        "deliveryStatus": "pending",
        "pendingDescendants": 0,
        "runtime": "1m3s",
        "runtimeMs": 63_000,
        "model": "echo/echo",
        "startedAt": ctx.store.clock.now_ms() - 63_000,
    }
    [task] = listed.tasks
    assert task.wire() == {
        "taskId": child.run_id,
        "runtime": "subagent",
        "deliveryStatus": "pending",
        "execution": {"state": "running"},
        "status": "running",
        "label": "probe-child",
    }
    assert (listed.total, listed.task_total, listed.recent) == (1, 1, [])


def test_a_queued_child_is_active_with_no_runtime_yet(ctx: ToolContext) -> None:
    spawn(ctx)
    listed = listing(ctx)
    assert listed.text.splitlines()[1] == "1. probe-child (echo, n/a) queued - Say hi and stop."
    assert (listed.active[0].execution.state, listed.tasks[0].status) == ("queued", "queued")


def test_a_finished_child_is_recent_with_its_tokens_and_its_task_completed(
    ctx: ToolContext, clock: FixedClock, inline: World
) -> None:
    child = spawn(ctx)
    clock.advance(1)
    start(ctx, child, lease_ms=1)
    clock.advance(5)
    inline.drain(follow_inline=True)
    entry = ctx.store.sessions.get(child.child_session_key)
    assert entry is not None
    assert entry.input_tokens
    assert entry.output_tokens
    total = entry.input_tokens + entry.output_tokens
    listed = listing(ctx)
    assert listed.text == (
        "active subagents:\n(none)\n\nrecent (last 30m):\n"
        f"1. probe-child (echo, 5s, tokens {total} (in {entry.input_tokens} / out {entry.output_tokens})) done"
        " - Say hi and stop."
    )
    [row] = listed.recent
    assert (row.index, row.status, row.execution.state, row.runtime, row.runtime_ms) == (
        1,
        "done",
        "finished",
        "5s",
        5_000,
    )
    assert (row.total_tokens, row.ended_at, row.delivery_status) == (
        entry.context_tokens,
        row.started_at + 5_000 if row.started_at else None,
        "delivered",
    )
    [task] = listed.tasks
    assert (task.status, task.execution.state, task.progress_summary) == (
        "completed",
        "finished",
        f"echo: [Subagent Task]: {TASK}",
    )


def test_past_recent_minutes_a_finished_child_still_counts_but_is_not_listed(
    ctx: ToolContext, clock: FixedClock, inline: World
) -> None:
    spawn(ctx)
    inline.drain(follow_inline=True)
    clock.advance(6 * 60)
    assert len(listing(ctx, recentMinutes=10).recent) == 1
    later = listing(ctx, recentMinutes=5)
    assert (later.total, later.task_total, later.recent, later.count) == (1, 0, [], 1)
    assert later.text.endswith("recent (last 5m):\n(none)")


def test_the_label_is_the_task_when_there_is_none_and_long_texts_are_cut(
    ctx: ToolContext, clock: FixedClock
) -> None:
    spawn(ctx, label=None, task="x" * 100)
    clock.advance(1)
    spawn(ctx, label="same", task="SAME")
    lines = listing(ctx).text.splitlines()[1:3]
    assert lines[0] == "1. same (echo, n/a) queued"  # no task suffix when it is the label
    assert lines[1] == f"2. {'x' * 45}... (echo, n/a) queued - {'x' * 69}..."


def test_a_killed_child_is_killed_and_its_task_cancelled_with_its_error(
    ctx: ToolContext, inline: World
) -> None:
    spawn(ctx)
    killed = TOOLS["subagents"].invoke(ctx, {"action": "kill", "target": "probe-child"})
    assert killed.wire()["killed"]  # type: ignore[union-attr]
    inline.drain(follow_inline=True)
    listed = listing(ctx)
    assert listed.recent[0].status == "killed"
    assert listed.text.splitlines()[-1].endswith(") killed - Say hi and stop.")
    [task] = listed.tasks
    assert (task.status, task.execution.state) == ("cancelled", "finished")
    assert task.error


def test_clawbuss_own_rows_stay_oldest_first_and_the_releases_newest_first(
    ctx: ToolContext, clock: FixedClock
) -> None:
    spawn(ctx, label="a")
    clock.advance(1)
    spawn(ctx, label="b")
    listed = listing(ctx, recursive="yes")
    assert (listed.count, [row.label for row in listed.subagents]) == (2, ["a", "b"])
    assert [(row.index, row.label) for row in listed.active] == [(1, "b"), (2, "a")]


def waited(ctx: ToolContext, **args: Any) -> dict[str, Any]:
    result = TOOLS["subagents"].invoke(ctx, {"action": "wait", **args})
    wire: dict[str, Any] = result.wire()
    return wire


def test_wait_answers_at_its_timeout_while_a_task_runs_and_at_once_once_one_ended(
    ctx: ToolContext, inline: World
) -> None:
    child = spawn(ctx)
    running = waited(ctx, taskIds=[child.run_id], timeoutSeconds=0)
    assert (running["status"], running["reason"], running["completed"]) == ("ok", "timeout", [])
    assert [task["taskId"] for task in running["tasks"]] == [child.run_id]
    inline.drain()
    done = waited(ctx, taskIds=child.run_id)  # one id as a text, as the release reads a list
    assert (done["reason"], done["completed"], done["attention"]) == ("completed", [child.run_id], [])
    assert done["tasks"][0]["status"] == "completed"


def test_wait_says_which_tasks_are_no_tasks_of_this_tree(ctx: ToolContext) -> None:
    child = spawn(ctx)
    answer = waited(ctx, taskIds=[child.run_id, "elsewhere"], timeoutSeconds=5)
    assert (answer["reason"], answer["unavailable"]) == ("unavailable", ["elsewhere"])


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"action": "wait"}, "taskIds required"),
        ({"action": "wait", "taskIds": []}, "taskIds required"),
        (
            {"action": "wait", "taskIds": [str(i) for i in range(33)]},
            "subagents wait supports at most 32 taskIds.",
        ),
        (
            {"action": "wait", "taskIds": ["t"], "timeoutSeconds": -1},
            "timeoutSeconds must be a non-negative integer",
        ),
        ({"action": "cancel"}, "taskId required"),
    ],
)
def test_wait_and_cancel_refuse_bad_arguments_in_the_releases_words(
    ctx: ToolContext, args: dict[str, Any], text: str
) -> None:
    with pytest.raises(ValidationError, match=text):
        TOOLS["subagents"].invoke(ctx, args)


def test_cancel_stops_a_running_task_and_says_so_once_it_ended(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    child = spawn(ctx)
    stopped = TOOLS["subagents"].invoke(ctx, {"action": "cancel", "taskId": child.run_id}).wire()
    assert stopped == {"status": "cancelled", "taskId": child.run_id, "found": True, "cancelled": True}
    entry = store.sessions.get(child.child_session_key)
    assert entry is not None
    assert entry.killed_at is not None
    inline.drain()
    again = TOOLS["subagents"].invoke(ctx, {"action": "cancel", "taskId": child.run_id}).wire()
    assert again == {
        "status": "error",
        "taskId": child.run_id,
        "found": True,
        "cancelled": False,
        "reason": "Task is already terminal.",
    }
    outside = TOOLS["subagents"].invoke(ctx, {"action": "cancel", "taskId": "elsewhere"}).wire()
    assert outside == {"status": "forbidden", "error": "Task outside session tree."}
