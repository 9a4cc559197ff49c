"""shared/tools/subagents_view.py: what ``subagents`` list keeps beyond the sessions there, as OpenClaw
2026.9.6's registries do: a child deleted at its cleanup (its row while its spawner keeps it, its tasks
longer), and each run its spawner's ``sessions_send`` started in a child, a task of runtime ``cli``, which
``cancel`` stops as the release does."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.ports.context import Context
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.subagent_targets import children
from clawbus.shared.tools.subagents_view import Child, FollowUp, follow_up_row
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Run, RunStatus, SessionEntry, ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.shared.wire.subagents_schema import SubagentsList, TaskCancelled
from clawbus.workers.testing import World
from tests.conftest import WorldFactory

TASK = "Say hi and stop."


def listing(ctx: ToolContext, **args: Any) -> SubagentsList:
    result = TOOLS["subagents"].invoke(ctx, {"action": "list", **args})
    assert isinstance(result, SubagentsList), result
    return result


def spawn(ctx: ToolContext, label: str, **args: Any) -> SpawnResult:
    spawned = TOOLS["sessions_spawn"].invoke(ctx, {"task": TASK, "label": label, **args})
    assert isinstance(spawned, SpawnResult), spawned
    return spawned


def send(ctx: ToolContext, label: str, message: str = "one more thing") -> SendResult:
    args = {"label": label, "agentId": "main", "message": message, "timeoutSeconds": 0}
    sent = TOOLS["sessions_send"].invoke(ctx, args)
    assert isinstance(sent, SendResult), sent
    return sent


def start(ctx: Context, child: SpawnResult, lease_ms: int = 1) -> None:
    """The child's run taken by a worker now; with a short lease, the worker is lost, and the next one to
    take the run (``drain_all``) finishes it."""
    ctx.store.runs.claim(
        child.run_id, child.child_session_key, owner="t", attempt=0, lease_ms=lease_ms, max_attempts=3
    )


def drain_all(w: World, after: float = 0) -> None:
    """Everything that is due done, ``after`` seconds from now."""
    clock = w.clock
    assert isinstance(clock, FixedClock)
    clock.advance(after)
    w.drain(follow_inline=True)


def finish(w: World, child: SpawnResult, seconds: float) -> None:
    """The child's run taken by a worker now, ended ``seconds`` later, and all that follows done."""
    start(w, child)
    drain_all(w, after=seconds)


def deleted_child(w: World, label: str = "gone-child") -> SpawnResult:
    """A child of the main session deleted at its cleanup."""
    child = spawn(w.context("main"), label, cleanup="delete")
    finish(w, child, 2)
    assert w.store.sessions.get(child.child_session_key) is None
    return child


def test_a_child_deleted_at_its_cleanup_keeps_its_row_and_task_but_not_its_tokens(
    ctx: ToolContext, inline: World
) -> None:
    child = deleted_child(inline)
    listed = listing(ctx)
    assert (listed.total, listed.task_total, listed.active) == (1, 1, [])
    [row] = listed.recent
    assert row.wire() == {
        "index": 1,
        "runId": child.run_id,
        "sessionKey": child.child_session_key,
        "label": "gone-child",
        "task": TASK,
        "status": "done",
        "execution": {"state": "finished"},
        "deliveryStatus": "delivered",
        "pendingDescendants": 0,
        "runtime": "2s",
        "runtimeMs": 2_000,
        "model": "echo/echo",
        "startedAt": row.started_at,
        "endedAt": (row.started_at or 0) + 2_000,
    }
    # Its tokens went with its session, as the release reads them from its session store.
    assert listed.text.splitlines()[-1] == f"1. gone-child (echo, 2s) done - {TASK}"
    [task] = listed.tasks
    assert (task.task_id, task.runtime, task.status, task.label) == (
        child.run_id,
        "subagent",
        "completed",
        "gone-child",
    )


def test_a_deleted_child_has_no_row_of_clawbuss_own_it_is_no_session(ctx: ToolContext, inline: World) -> None:
    deleted_child(inline)
    listed = listing(ctx, recursive=True)
    assert (listed.count, listed.subagents) == (0, [])


def test_a_deleted_childs_row_lapses_archive_after_minutes_after_it_and_its_task_a_day_after(
    world: WorldFactory, clock: FixedClock
) -> None:
    w = world({"agents": {"defaults": {"subagents": {"archiveAfterMinutes": 45}}}})
    ctx = w.context("main")
    deleted_child(w)
    clock.advance(45 * 60 - 1)
    kept = listing(ctx, recentMinutes=60)
    assert (kept.total, len(kept.recent), kept.task_total) == (1, 1, 1)
    clock.advance(1)
    lapsed = listing(ctx, recentMinutes=1440)
    assert (lapsed.total, lapsed.recent, lapsed.task_total) == (0, [], 1)
    clock.advance(24 * 60 * 60 - 45 * 60)
    assert listing(ctx, recentMinutes=1440).task_total == 0


def test_with_archiving_off_a_deleted_childs_row_stays_five_minutes(
    world: WorldFactory, clock: FixedClock
) -> None:
    w = world({"agents": {"defaults": {"subagents": {"archiveAfterMinutes": 0}}}})
    ctx = w.context("main")
    deleted_child(w)
    clock.advance(5 * 60 - 1)
    assert listing(ctx).total == 1
    clock.advance(1)
    assert listing(ctx).total == 0


def test_a_deleted_child_is_among_the_numbered_children_a_command_targets(
    ctx: ToolContext, inline: World
) -> None:
    child = deleted_child(inline)
    assert [each.entry.key for each in children(ctx).numbered] == [child.child_session_key]


def test_a_send_from_the_spawner_into_its_child_is_a_cli_task_labelled_as_the_child(
    ctx: ToolContext, clock: FixedClock, inline: World
) -> None:
    child = spawn(ctx, "kept-child")
    finish(inline, child, 1)
    clock.advance(1)
    first = send(ctx, "kept-child", "first")
    drain_all(inline)
    clock.advance(1)
    second = send(ctx, "kept-child", "second")
    drain_all(inline)
    listed = listing(ctx)
    follow = [task for task in listed.tasks if task.runtime == "cli"]
    # The latest ended first, as the release orders tasks.
    assert [task.task_id for task in follow] == [second.run_id, first.run_id]
    assert follow[0].wire() == {
        "taskId": second.run_id,
        "runtime": "cli",
        "deliveryStatus": "not_applicable",
        "execution": {"state": "finished"},
        "status": "completed",
        "label": "kept-child",
        "terminalSummary": "completed",
    }
    assert (listed.task_total, listed.total) == (3, 1)


def test_a_send_into_a_child_from_another_session_is_no_task(world: WorldFactory) -> None:
    w = world()
    main = w.context("main")
    child = spawn(main, "kept-child")
    finish(w, child, 1)
    peer = w.context("agent:research:main")
    send(peer, "kept-child")
    drain_all(w)
    assert [task.runtime for task in listing(main).tasks] == ["subagent"]


def test_a_send_waiting_behind_the_childs_run_is_a_running_task_still_queued(ctx: ToolContext) -> None:
    child = spawn(ctx, "busy-child")
    start(ctx, child, lease_ms=60_000)
    sent = send(ctx, "busy-child")
    [task] = [task for task in listing(ctx).tasks if task.runtime == "cli"]
    assert (task.task_id, task.status, task.execution.state, task.terminal_summary) == (
        sent.run_id,
        "running",
        "queued",
        None,
    )


def test_a_deleted_childs_follow_ups_stay_with_it(ctx: ToolContext, store: Store, inline: World) -> None:
    child = spawn(ctx, "gone-child", cleanup="delete")
    start(ctx, child)
    sent = send(ctx, "gone-child")
    drain_all(inline, after=1)
    assert store.sessions.get(child.child_session_key) is None
    listed = listing(ctx)
    assert [(task.task_id, task.runtime) for task in listed.tasks if task.runtime == "cli"] == [
        (sent.run_id, "cli")
    ]


@pytest.mark.parametrize(
    ("run_status", "task_status", "summary"),
    [
        (RunStatus.ERROR, "failed", "failed"),
        (RunStatus.TIMEOUT, "timed_out", "aborted"),
        (RunStatus.ABORTED, "cancelled", "aborted"),
    ],
)
def test_a_follow_up_that_did_not_succeed_says_how_in_the_releases_words(
    run_status: RunStatus, task_status: str, summary: str
) -> None:
    entry = SessionEntry.model_validate(
        {
            "key": "agent:main:subagent:x",
            "agentId": "main",
            "kind": "other",
            "sessionId": "s",
            "updatedAt": 1,
            "createdAt": 1,
            "label": "x",
        }
    )
    run = Run.model_validate(
        {
            "runId": "r",
            "sessionKey": entry.key,
            "agentId": "main",
            "kind": "send",
            "status": run_status.value,
            "seq": 1,
            "createdAt": 1,
            "endedAt": 2,
            "error": "the model said\n  no",
        }
    )
    row = follow_up_row(FollowUp(Child(entry, "done", None, None, None), run))
    assert (row.status, row.terminal_summary, row.execution.state, row.error) == (
        task_status,
        summary,
        "finished",
        "the model said no",
    )


# --- cancel: a follow-up task ---------------------------------------------------------------------------


def cancel(ctx: ToolContext, task_id: str) -> TaskCancelled | ToolFailure:
    result = TOOLS["subagents"].invoke(ctx, {"action": "cancel", "taskId": task_id})
    assert isinstance(result, TaskCancelled | ToolFailure), result
    return result


def test_cancelling_a_queued_follow_up_aborts_its_run_alone_in_the_releases_words(
    ctx: ToolContext, store: Store
) -> None:
    child = spawn(ctx, "busy-child")
    start(ctx, child, lease_ms=60_000)
    sent = send(ctx, "busy-child")
    assert cancel(ctx, sent.run_id) == TaskCancelled(
        status="cancelled", task_id=sent.run_id, found=True, cancelled=True
    )
    run = store.runs.get(sent.run_id)
    assert run is not None
    assert (run.status, run.error) == (RunStatus.ABORTED, "Cancelled by operator.")
    tasks = {task.runtime: task for task in listing(ctx).tasks}
    assert (tasks["cli"].status, tasks["cli"].terminal_summary, tasks["cli"].error) == (
        "cancelled",
        "aborted",
        "Cancelled by operator.",
    )
    # The child goes on with its own run.
    assert tasks["subagent"].status == "running"


def test_cancelling_a_running_follow_up_asks_its_worker_to_stop_it(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    child = spawn(ctx, "kept-child")
    finish(inline, child, 1)
    sent = send(ctx, "kept-child")
    store.runs.claim(
        sent.run_id, child.child_session_key, owner="t", attempt=0, lease_ms=60_000, max_attempts=3
    )
    result = cancel(ctx, sent.run_id)
    assert isinstance(result, TaskCancelled)
    assert (result.status, result.cancelled) == ("cancelled", True)
    assert store.runs.cancel_requested(sent.run_id)


def test_cancelling_an_ended_follow_up_says_it_is_already_terminal(ctx: ToolContext, inline: World) -> None:
    child = spawn(ctx, "kept-child")
    finish(inline, child, 1)
    sent = send(ctx, "kept-child")
    drain_all(inline)
    assert cancel(ctx, sent.run_id) == TaskCancelled(
        status="error", task_id=sent.run_id, found=True, cancelled=False, reason="Task is already terminal."
    )


def test_a_deleted_childs_ended_follow_up_is_still_a_task_of_the_tree(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    child = spawn(ctx, "gone-child", cleanup="delete")
    start(ctx, child)
    sent = send(ctx, "gone-child")
    drain_all(inline, after=1)
    assert store.sessions.get(child.child_session_key) is None
    result = cancel(ctx, sent.run_id)
    assert isinstance(result, TaskCancelled)
    assert result.reason == "Task is already terminal."


def test_a_send_into_a_child_from_another_session_cannot_be_cancelled_as_a_task(
    world: WorldFactory,
) -> None:
    w = world()
    main = w.context("main")
    child = spawn(main, "busy-child")
    start(main, child, lease_ms=60_000)
    peer = w.context("agent:research:main")
    sent = send(peer, "busy-child")
    assert cancel(main, sent.run_id) == ToolFailure(status="forbidden", error="Task outside session tree.")
    run = w.store.runs.get(sent.run_id)
    assert run is not None
    assert run.status == RunStatus.QUEUED
