"""Orchestration in one process (workers.testing.world): a sub-agent that spawns sub-agents, yields until
they report, is woken once with every report, and is reported to its own requester only then."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.models import RunStatus, ToolFailure
from shared.tools.context import ToolContext
from shared.tools.registry import TOOLS
from shared.tools.spawn_schema import SpawnResult
from workers.testing import World, world

MAIN = "agent:main:main"
LEAF_TASK = "[Subagent Task]: leaf"


def leaf_spawn(label: str) -> dict[str, Any]:
    return {"name": "sessions_spawn", "args": {"task": "leaf", "label": label}}


def config(max_depth: int = 2, **subagents: Any) -> dict[str, Any]:
    return {
        "agents": {
            "defaults": {"subagents": {"maxSpawnDepth": max_depth, **subagents}},
            "list": [{"id": "main", "default": True, "model": "script/orchestra"}],
        },
        "tools": {"sessions": {"visibility": "all"}},
        "models": {
            "providers": {
                "script": {
                    "type": "script",
                    "models": ["orchestra"],
                    "rules": [
                        # The orchestrator fans out to three leaves in one step, then yields.
                        {
                            "match": r"^\[Subagent Task\]: orchestrate",
                            "tools": [leaf_spawn("a"), leaf_spawn("b"), leaf_spawn("c")],
                        },
                        {"match": r'"childSessionKey"', "tool": {"name": "sessions_yield", "args": {}}},
                        {"match": r"^\[Subagent Task\]: leaf", "reply": "leaf done"},
                        {"match": r"^Your sub-agents reported \(3\)", "reply": "all three are in"},
                        {"match": r"^Sub-agent announce step\.$", "reply": "Result: synthesized"},
                    ],
                }
            }
        },
    }


def spawn_orchestrator(w: World) -> SpawnResult:
    ctx = ToolContext.for_caller(w.config, w.store, w.dispatcher, MAIN)
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "orchestrate", "label": "boss"})
    assert isinstance(result, SpawnResult), result
    return result


def runs_of(w: World, session_key: str) -> list[Any]:
    lane_runs = [m.run_id for m in w.store.transcripts.all(session_key) if m.role == "user"]
    return [w.store.runs.get(run_id) for run_id in dict.fromkeys(r for r in lane_runs if r)]


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

    # The orchestrator ran three times: its task (spawned, yielded), one wake with all three reports, and
    # its announce step.
    kinds = [run.kind for run in runs_of(w, boss.child_session_key) if run]
    assert kinds == ["subagent", "report", "subagent_announce"]
    [wake] = [run for run in runs_of(w, boss.child_session_key) if run and run.kind == "report"]
    assert wake.status is RunStatus.OK
    assert wake.reply == "all three are in"
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


def test_a_yield_with_no_child_pending_is_an_error_and_the_turn_goes_on() -> None:
    w = world(config())
    ctx = ToolContext(w.config, w.store, w.dispatcher, MAIN, origin_run_id="r1")
    refused = TOOLS["sessions_yield"].invoke(ctx, {})
    assert isinstance(refused, ToolFailure)
    assert "nothing to wait for" in refused.error


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
    ctx = ToolContext.for_caller(w.config, w.store, w.dispatcher, MAIN)
    outcomes = [TOOLS["sessions_spawn"].invoke(ctx, {"task": "leaf", **args}) for _ in range(3)]
    refused = [o for o in outcomes if isinstance(o, ToolFailure)]
    assert refused
    assert error in refused[0].error


def test_a_leaf_at_max_spawn_depth_may_not_spawn_and_its_role_says_so() -> None:
    w = world(config(max_depth=2))
    boss = spawn_orchestrator(w)
    w.drain(follow_inline=True)
    leaf_key = w.store.sessions.children(boss.child_session_key)[0]
    ctx = ToolContext.for_caller(w.config, w.store, w.dispatcher, leaf_key)
    refused = TOOLS["sessions_spawn"].invoke(ctx, {"task": "deeper"})
    assert isinstance(refused, ToolFailure)
    assert refused.error == (
        "sessions_spawn is not allowed from sub-agent sessions at depth 2 (subagents.maxSpawnDepth is 2)"
    )


def test_the_list_rows_carry_depth_role_and_spawner() -> None:
    w = world(config())
    boss = spawn_orchestrator(w)
    w.drain(follow_inline=True)
    ctx = ToolContext.for_caller(w.config, w.store, w.dispatcher, MAIN)
    listed = TOOLS["sessions_list"].invoke(ctx, {"limit": 50})
    rows = {row.key: row for row in listed.sessions}  # type: ignore[union-attr]
    assert (rows[boss.child_session_key].spawn_depth, rows[boss.child_session_key].spawned_by) == (1, MAIN)
    assert json.loads(rows[boss.child_session_key].model_dump_json(by_alias=True))["role"] == "orchestrator"
