"""An orchestration tree in the in-process world (workers.testing.world): main spawns an orchestrator (the
script runtime) that fans out to three leaves in one step and yields until they report."""

from __future__ import annotations

from typing import Any

from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World

MAIN = "agent:main:main"


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
                        {"match": r"^Your sub-agents reported \(3\)", "reply": "synthesized"},
                    ],
                }
            }
        },
    }


def spawn_orchestrator(w: World) -> SpawnResult:
    ctx = w.context(MAIN)
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "orchestrate", "label": "boss"})
    assert isinstance(result, SpawnResult), result
    return result


def runs_of(w: World, session_key: str) -> list[Any]:
    lane_runs = [m.run_id for m in w.store.transcripts.all(session_key) if m.role == "user"]
    return [w.store.runs.get(run_id) for run_id in dict.fromkeys(r for r in lane_runs if r)]
