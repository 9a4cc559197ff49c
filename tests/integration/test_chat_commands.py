"""Chat commands on the real stack (shared/commands): `/steer` into a run a worker is streaming from a slow
model, through another API process than the run's; `/subagents` looking at a tree workers are running and
`/subagents kill` stopping it, its leaves' model calls cut short; `/status` and `/queue` answered without a
run. Two API processes, one worker, beat, redis-server; a fake OpenAI server that paces its answers
(``tests.support.fake_openai.planned``) and a scripted orchestrator."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from clawbus_client import Client
from clawbus_client.models import CommandReply, Run, SendResult, SpawnResult

from tests.support.fake_openai import FakeOpenAI, fake_openai, planned, user_texts
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

LEAVES = 2
# A leaf's model step: far longer than any test waits, so a leaf that ends did so because it was killed.
LEAF_MS = 60_000


def stack_config(model: FakeOpenAI) -> dict[str, Any]:
    """``gpt`` talks to the pacing fake model; ``main`` orchestrates: it spawns LEAVES ``worker`` leaves
    in one step and yields."""
    leaf = {"name": "sessions_spawn", "args": {"task": "leaf work", "agentId": "worker"}}
    return {
        "agents": {
            "defaults": {"subagents": {"maxSpawnDepth": 2}},
            "list": [
                {
                    "id": "main",
                    "default": True,
                    "model": "orch/orch",
                    "subagents": {"allowAgents": ["worker"]},
                },
                {"id": "worker", "model": "leafy/leaf"},
                {"id": "gpt", "model": "fake/gpt"},
            ],
        },
        "models": {
            "providers": {
                "fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt"]},
                "orch": {
                    "type": "script",
                    "models": ["orch"],
                    "rules": [
                        {"match": r"^\[Subagent Task\]: orchestrate", "tools": [leaf] * LEAVES},
                        {"match": r'"childSessionKey"', "tool": {"name": "sessions_yield", "args": {}}},
                    ],
                },
                "leafy": {"type": "script", "models": ["leaf"], "delayMs": LEAF_MS, "rules": []},
            }
        },
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    }


@dataclass
class Stack:
    model: FakeOpenAI
    a: Client
    b: Client

    def chat(self, agent: str) -> tuple[str, dict[str, str]]:
        """A new direct chat with an agent, and the route of its own sender (who may run commands)."""
        peer = uuid.uuid4().hex[:8]
        return f"agent:{agent}:webchat:direct:{peer}", {"channel": "webchat", "senderId": peer}

    def command(self, client: Client, key: str, text: str, sender: dict[str, str]) -> CommandReply:
        answer = client.post_message(key, text, timeout_seconds=0, **sender)
        assert isinstance(answer, CommandReply), answer
        assert answer.status == "ok", answer
        return answer

    def ended(self, run_id: str, timeout: float = 60) -> Run:
        run = self.a.wait_run(run_id, timeout=timeout)
        assert run is not None, f"run {run_id} still going after {timeout}s"
        return run


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fresh = Fresh(tmp_path_factory.mktemp("commands"))
    try:
        with fake_openai(planned) as model:
            fresh.start_redis(config=stack_config(model))
            fresh.worker(concurrency=8)
            fresh.beat()
            _, url_a = fresh.api()
            _, url_b = fresh.api()
            with Client(url_a, TOKEN) as a, Client(url_b, TOKEN) as b:
                yield Stack(model, a, b)
    finally:
        fresh.close()


def test_steer_reaches_the_run_a_worker_is_streaming_at_its_next_model_step(stack: Stack) -> None:
    key, sender = stack.chat("gpt")
    plan = "plan: steps=3 seconds=1.5"
    first = stack.a.post_message(key, plan, timeout_seconds=0, **sender)
    assert isinstance(first, SendResult)
    wait_for(
        lambda: any(user_texts(body)[:1] == [plan] for body in stack.model.requests),
        30,
        what="the run's first model step",
    )
    # The session's mode would refuse a plain message now; /steer goes in whatever it is.
    assert stack.command(stack.b, key, "/queue reject", sender).reply == "⚙️ Queue mode set to reject."
    steered = stack.b.post_message(key, "/steer be brief", timeout_seconds=0, **sender)
    assert isinstance(steered, SendResult)
    assert steered.status == "accepted"
    run = stack.ended(first.run_id)
    assert run.reply == f"heard: {plan} | be brief"  # a later step of the run saw it
    steer = stack.ended(steered.run_id)
    assert (steer.status, steer.steered_into) == ("ok", first.run_id)


def test_tell_with_nothing_running_runs_as_a_message_of_its_own(stack: Stack) -> None:
    key, sender = stack.chat("gpt")
    told = stack.a.post_message(key, "/tell hello there", timeout_seconds=0, **sender)
    assert isinstance(told, SendResult)
    assert stack.ended(told.run_id).reply == "heard: hello there"


def test_subagents_shows_a_running_tree_and_kill_stops_it_whole(stack: Stack) -> None:
    caller, sender = stack.chat("main")
    stack.a.open_session(caller)
    label = f"boss-{uuid.uuid4().hex[:6]}"
    spawned = SpawnResult.model_validate(
        stack.a.invoke("sessions_spawn", {"task": "orchestrate", "label": label}, caller=caller)
    )
    boss = spawned.child_session_key
    leaves = wait_for(
        lambda: len(found := leaf_runs(stack.a, boss)) == LEAVES and found, 60, what="the leaves"
    )
    wait_for(
        lambda: all(stack.a.get_run(run_id).status == "running" for run_id in leaves),
        60,
        what="the leaves' model steps",
    )

    listed = stack.command(stack.b, caller, "/subagents list", sender).reply or ""
    assert listed.split("\n")[2].startswith(f"1. {label} (orch, ")
    assert listed.split("\n")[2].endswith(f"waiting on {LEAVES} children - orchestrate")
    info = stack.command(stack.a, caller, f"/subagents info {label[:6]}", sender).reply or ""
    assert f"Session: {boss}" in info
    assert f"Status: waiting on {LEAVES} children" in info.split("\n")

    killed = stack.command(stack.b, caller, "/subagents kill 1", sender)
    assert killed.reply == f"killed {label} (+ {LEAVES} descendants)."
    assert set(killed.killed or []) == {boss, *(stack.a.get_run(r).session_key for r in leaves)}
    # Each leaf was mid-way through a minute-long model step: it ends now, aborted.
    for run_id in leaves:
        assert stack.ended(run_id, timeout=10).status == "aborted"
    for key in killed.killed or []:
        assert stack.a.get_session(key).status == "killed"
    status = stack.command(stack.a, caller, "/status", sender).reply or ""
    assert status.startswith("🦞 clawbus")
    assert f"🧵 Session: {caller}" in status


def leaf_runs(client: Client, boss: str) -> list[str]:
    """The spawn run of each of the orchestrator's children."""
    listed = client.invoke("subagents", {"action": "list"}, caller=boss)
    return [row["runId"] for row in listed["active"]]
