"""Orchestration in one process (workers.testing.world): a sub-agent that spawns sub-agents, yields until
they report, is woken once with every report, and is reported to its own requester only then."""

from __future__ import annotations

import json
from typing import Any

import pytest

from clawbus.shared.domain.runs import new_run
from clawbus.shared.intake.submit import submit
from clawbus.shared.runner.execution import Attempt
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import RunStatus, ToolFailure
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers import lanes
from clawbus.workers.services import WorkerContext
from clawbus.workers.testing import World, world
from tests.support.world_orchestra import MAIN, config, runs_of, spawn_orchestrator


def test_an_orchestrator_yields_is_woken_once_with_three_reports_and_reports_once() -> None:
    w = world(config())
    boss = spawn_orchestrator(w)
    w.drain(follow_inline=True)

    boss_entry = w.store.sessions.get(boss.child_session_key)
    assert boss_entry is not None
    assert (boss_entry.spawn_depth, boss_entry.role, boss_entry.spawned_by) == (1, "orchestrator", MAIN)
    leaves = [w.store.sessions.get(key) for key in w.store.sessions.children(boss.child_session_key)]
    assert sorted((e.spawn_depth, e.role, e.spawned_by, e.label) for e in leaves if e) == [
        (2, "leaf", boss.child_session_key, label) for label in ("a", "b", "c")
    ]

    # The orchestrator ran twice: its task (spawned, yielded) and one wake with all three reports, whose
    # reply is its own result.
    kinds = [run.kind for run in runs_of(w, boss.child_session_key) if run]
    assert kinds == ["subagent", "report"]
    [wake] = [run for run in runs_of(w, boss.child_session_key) if run and run.kind == "report"]
    assert wake.status is RunStatus.OK
    assert wake.reply == "synthesized"
    woken_with = next(
        m.text for m in w.store.transcripts.all(boss.child_session_key) if m.run_id == wake.run_id
    )
    assert woken_with.startswith("Your sub-agents reported (3), in the order they ended:")
    assert woken_with.count("Status: success") == 3

    # Main got exactly one report, the orchestrator's, once it was done with its children.
    notes = [
        m for m in w.store.transcripts.all(MAIN) if m.provenance and m.provenance.kind == "subagent_announce"
    ]
    assert len(notes) == 1
    assert notes[0].provenance is not None
    assert notes[0].provenance.source_session_key == boss.child_session_key
    assert notes[0].text.startswith("Status: success\nResult: synthesized")
    after = w.store.sessions.get(boss.child_session_key)
    assert after is not None
    assert (after.pending_children, after.waiting) == (0, None)


@pytest.mark.parametrize(
    ("settings", "args", "error"),
    [
        (
            {"maxChildrenPerAgent": 2},
            {},
            "this session has 2 children that have not ended (subagents.maxChildrenPerAgent is 2)",
        ),
        ({"requireAgentId": True}, {}, "sessions_spawn needs an agentId here (subagents.requireAgentId)"),
    ],
)
def test_spawn_limits_are_refused_naming_the_limit(
    settings: dict[str, Any], args: dict[str, Any], error: str
) -> None:
    w = world(config(**settings))
    ctx = w.context(MAIN)
    outcomes = [TOOLS["sessions_spawn"].invoke(ctx, {"task": "leaf", **args}) for _ in range(3)]
    refused = [o for o in outcomes if isinstance(o, ToolFailure)]
    assert refused
    assert error in refused[0].error


def test_a_leaf_at_max_spawn_depth_may_not_spawn_and_its_role_says_so() -> None:
    w = world(config(max_depth=2))
    boss = spawn_orchestrator(w)
    w.drain(follow_inline=True)
    leaf_key = w.store.sessions.children(boss.child_session_key)[0]
    ctx = w.context(leaf_key)
    refused = TOOLS["sessions_spawn"].invoke(ctx, {"task": "deeper"})
    assert isinstance(refused, ToolFailure)
    assert refused.error == (
        "sessions_spawn is not allowed from sub-agent sessions at depth 2 (subagents.maxSpawnDepth is 2)"
    )


def test_the_list_rows_carry_depth_role_and_spawner() -> None:
    w = world(config())
    boss = spawn_orchestrator(w)
    w.drain(follow_inline=True)
    ctx = w.context(MAIN)
    listed = TOOLS["sessions_list"].invoke(ctx, {"limit": 50})
    rows = {row.key: row for row in listed.sessions}  # type: ignore[union-attr]
    assert (rows[boss.child_session_key].spawn_depth, rows[boss.child_session_key].spawned_by) == (1, MAIN)
    assert json.loads(rows[boss.child_session_key].model_dump_json(by_alias=True))["role"] == "orchestrator"


def yielded_tree(w: World) -> SpawnResult:
    """The orchestrator spawned its three leaves and yielded; the leaves have not run yet."""
    boss = spawn_orchestrator(w)
    head = w.dispatcher.take_head()
    assert head is not None
    assert head.run_id == boss.run_id
    # The worker's own code, for this one run: the leaves it spawns stay queued.
    worker = WorkerContext(w.config, w.store, w.dispatcher, follow_inline=False)
    lanes.run_and_follow(worker, Attempt(head.run_id, head.session_key, owner="t", attempt=0))
    return boss


def tool(w: World, caller: str, name: str, **args: Any) -> Any:
    return TOOLS[name].invoke(w.context(caller), args)


def test_while_yielded_the_status_card_and_the_parents_list_say_waiting() -> None:
    w = world(config())
    boss = yielded_tree(w)
    card = tool(w, boss.child_session_key, "session_status")
    assert card.state == "waiting for 3 children"
    assert (card.children_pending, card.role, card.spawn_depth) == (3, "orchestrator", 1)
    listed = tool(w, MAIN, "subagents", action="list")
    assert [(r.key, r.status, r.waiting_for, r.pending_report) for r in listed.subagents] == [
        (boss.child_session_key, "waiting", 3, True)
    ]
    deep = tool(w, MAIN, "subagents", action="list", recursive=True)
    assert [r.depth for r in deep.subagents] == [1, 2, 2, 2]
    assert {r.status for r in deep.subagents[1:]} == {"queued"}
    w.drain(follow_inline=True)
    done = tool(w, MAIN, "subagents", action="list", recursive=True)
    assert {(r.status, r.pending_report) for r in done.subagents} == {("done", False)}


def test_killing_an_orchestrator_kills_its_leaves_and_each_reports_once_killed() -> None:
    w = world(config())
    boss = yielded_tree(w)
    killed = tool(w, MAIN, "subagents", action="kill", target="boss")
    assert killed.killed[0] == boss.child_session_key
    assert len(killed.killed) == 4
    w.drain(follow_inline=True)
    reports = [
        m.text
        for m in w.store.transcripts.all(MAIN)
        if m.provenance and m.provenance.kind == "subagent_announce"
    ]
    assert len(reports) == 1  # the orchestrator's, once; its leaves reported to it
    assert reports[0].startswith("Status: killed")
    leaves = [w.store.sessions.get(key) for key in w.store.sessions.children(boss.child_session_key)]
    leaf_runs = [w.store.runs.get(leaf.spawn_flow_id) for leaf in leaves if leaf and leaf.spawn_flow_id]
    assert {run.status for run in leaf_runs if run} == {RunStatus.ABORTED}  # never started
    assert all(
        tool(w, MAIN, "subagents", action="info", target=k).subagent.status == "killed" for k in killed.killed
    )


def test_a_steer_to_a_child_that_is_not_running_becomes_a_run_of_its_own() -> None:
    w = world(config(max_depth=1))
    child = spawn_orchestrator(w)
    steered = tool(w, MAIN, "subagents", action="steer", target="boss", message="hurry up")
    assert steered.delivered == "new_run"  # its run is queued, not running yet
    w.drain(follow_inline=True)
    said = [(m.role, m.text) for m in w.store.transcripts.all(child.child_session_key)]
    assert ("user", "hurry up") in said
    assert said[said.index(("user", "hurry up")) + 1] == ("assistant", "echo: hurry up")


def test_a_steer_queued_behind_a_running_run_is_taken_in_at_its_next_step() -> None:
    w = world(config(max_depth=1))
    boss = spawn_orchestrator(w)  # a leaf here (depth 1 of 1): its spawns are refused, in two steps
    key = boss.child_session_key
    head = w.dispatcher.take_head()
    assert head is not None
    # The steer arrives while the child's run is the lane's head, between its steps.
    entry = w.store.sessions.get(key)
    assert entry is not None
    submit(
        w.store.runs,
        w.dispatcher,
        entry,
        {},
        new_run(entry, "steer", "change of plan", run_id="s-1", now=w.clock.now_ms()),
    )
    taken = w.store.runs.absorb_steers(head.run_id, key)
    assert taken == ["s-1"]
    steer = w.store.runs.get("s-1")
    assert steer is not None
    assert (steer.status, steer.steered_into) == (RunStatus.OK, head.run_id)
    assert w.store.runs.lane(key) == [head.run_id]
    assert w.store.runs.absorb_steers(head.run_id, key) == ["s-1"]  # asked again: the same, once


def test_session_status_refuses_an_unknown_model_in_its_result() -> None:
    w = world(config())
    boss = spawn_orchestrator(w)
    refused = tool(w, boss.child_session_key, "session_status", model="nope/x")
    assert isinstance(refused, ToolFailure)
    assert refused.error.startswith("unknown model: nope/x (configured: ")
    card = tool(w, boss.child_session_key, "session_status", model="echo/echo")
    assert (card.changed_model, card.model, card.model_provider, card.model_override) == (
        True,
        "echo",
        "echo",
        "echo/echo",
    )
    assert (card.model_ref, card.model_source) == ("echo/echo", "session")


def test_a_killed_orchestrators_runtime_ends_at_its_kill() -> None:
    w = world(config())
    boss = yielded_tree(w)
    w.clock.advance(5)
    tool(w, MAIN, "subagents", action="kill", target=boss.child_session_key)
    w.clock.advance(100)
    [row] = tool(w, MAIN, "subagents", action="list").subagents
    assert row.status == "killed"
    assert row.runtime_ms >= 5000


def test_a_yielded_orchestrator_waits_on_its_children_in_the_releases_view_and_on_the_card() -> None:
    w = world(config())
    boss = yielded_tree(w)
    listed = tool(w, MAIN, "subagents", action="list")
    [row] = listed.active
    assert (row.session_key, row.status, row.execution.state, row.pending_descendants) == (
        boss.child_session_key,
        "waiting on 3 children",
        "waiting",
        3,
    )
    assert row.child_sessions == sorted(w.store.sessions.children(boss.child_session_key))
    # The tasks are the whole tree's spawns: the orchestrator's, and its three leaves' (still queued).
    assert sorted(task.status for task in listed.tasks) == ["queued", "queued", "queued", "running"]
    card = tool(w, MAIN, "session_status")
    assert "🤖 Subagents: 1 active\n  • boss · 0s · waiting for child tasks · 3 children pending\n" in (
        card.status_text
    )
