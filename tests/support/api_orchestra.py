"""An orchestration tree behind the in-process API (tests/unit/api/conftest.py), for the tests of its
sub-agent routes, client and commands: main spawns the orchestrator ``boss`` (the script runtime), which
fans out to three leaves in one step and yields."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from clawbus.shared.config import Config
from clawbus.shared.runner.execution import Attempt
from clawbus.workers import lanes
from clawbus.workers.services import WorkerContext
from clawbus.workers.testing import World
from tests.conftest import make_config
from tests.support.api_app import TOKEN

MAIN = "agent:main:main"
# A token for the research agent only: main's sessions are not its to see or stop.
SCOPED_TOKEN = "research-only-token"
SCOPED = {"name": "research-only", "token": SCOPED_TOKEN, "agents": ["research"], "owner": False}
# What a failing sub-agent's model said: the API shows it redacted.
SECRET = "sk-abcdefghijklmnopqrstuvwx1234"


def _spawn(task: str, label: str) -> dict[str, Any]:
    return {"name": "sessions_spawn", "args": {"task": task, "label": label}}


def orchestra_config() -> Config:
    """Main's sub-agents may spawn one level more (maxSpawnDepth 2)."""
    return make_config(
        {
            "gateway": {"auth": {"tokens": [TOKEN, SCOPED]}},
            "agents": {
                "defaults": {"subagents": {"maxSpawnDepth": 2}},
                "list": [{"id": "main", "default": True, "model": "script/orchestra"}, {"id": "research"}],
            },
            "models": {
                "providers": {
                    "script": {
                        "type": "script",
                        "models": ["orchestra"],
                        "rules": [
                            {
                                "match": r"^\[Subagent Task\]: orchestrate",
                                "tools": [_spawn("leaf", "a"), _spawn("leaf", "b"), _spawn("leaf", "c")],
                            },
                            {"match": r'"childSessionKey"', "tool": {"name": "sessions_yield", "args": {}}},
                            {"match": r"^\[Subagent Task\]: leaf", "reply": "leaf done"},
                            {"match": r"^\[Subagent Task\]: leak", "error": f"the model said {SECRET}"},
                            {"match": r"^Your sub-agents reported", "reply": "synthesized"},
                        ],
                    }
                }
            },
        }
    )


def yielded_boss(http: TestClient, world: World) -> str:
    """Main (which has run once) spawned ``boss``, which spawned its three leaves and yielded; the leaves
    are queued, not run yet. Boss's session key."""
    http.post("/v1/sessions/main/messages", json={"message": "hello", "timeoutSeconds": 0})
    world.drain()
    spawned = http.post(
        "/tools/invoke", json={"tool": "sessions_spawn", "args": {"task": "orchestrate", "label": "boss"}}
    ).json()["result"]["details"]
    head = world.dispatcher.take_head()
    assert head is not None
    assert head.run_id == spawned["runId"]
    # The worker's own code for this one run: the leaves it spawns stay queued.
    worker = WorkerContext(world.config, world.store, world.dispatcher, follow_inline=False)
    lanes.run_and_follow(worker, Attempt(head.run_id, head.session_key, owner="t", attempt=0))
    key: str = spawned["childSessionKey"]
    return key
