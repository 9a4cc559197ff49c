"""Orchestration through real workers (docs/contract.md, "Orchestration"): main -> an orchestrator -> leaves,
with a slow scripted model; yields woken once, reports delivered once, trees stopped whole, a fleet-wide
cap on sub-agent runs; also under a worker killed mid-tree."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from clawbus_client import Client
from clawbus_client.models import CommandReply, Run, SessionsHistoryResult, SpawnResult

from clawbus.shared.tools.history_view import run_of
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh
from tests.support.stack_orchestra import (
    LEAVES,
    finished,
    orchestra,
    reports_to,
    requester,
    spawn_orchestrator,
)

# How far two processes' stamps of one moment may differ: each reads Redis's clock and counts on from it,
# off by at most half that reading's round trip (shared/store/server_clock.py).
CLOCK_ERROR_MS = 50


@pytest.fixture
def fleet(fresh: Fresh) -> Iterator[Client]:
    """Two workers (so a tree's runs land on both), beat, one API."""
    fresh.start_redis(config=orchestra())
    fresh.worker(concurrency=8)
    fresh.worker(concurrency=8)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        yield client


def runs_in(client: Client, session_key: str) -> list[Run]:
    """Every run of a session, from its transcript (each run's messages carry its id)."""
    history = client.sessions_history(session_key, include_tools=True, limit=1000)
    assert isinstance(history, SessionsHistoryResult)
    ids = dict.fromkeys(run for m in history.messages if (run := run_of(m)))
    return [client.get_run(run_id) for run_id in ids]


def children_of(client: Client, session_key: str) -> list[dict[str, Any]]:
    listed = client.invoke("subagents", {"action": "list"}, caller=session_key)
    return list(listed["subagents"])


def test_a_tree_of_an_orchestrator_and_three_leaves_reports_once_after_one_wake(fleet: Client) -> None:
    caller = requester(fleet)
    boss = spawn_orchestrator(fleet, caller)
    # While it waits for its leaves, its status says so (and so does its parent's list).
    wait_for(lambda: [r["status"] for r in children_of(fleet, caller)] == ["waiting"], 30, what="the yield")
    # Read by its spawner: session_status is not a sub-agent's tool.
    card = fleet.invoke("session_status", {"sessionKey": boss.child_session_key}, caller=caller)
    assert card["state"] == f"waiting for {LEAVES} children"
    report = finished(fleet, caller)
    assert report.startswith("Status: success\nResult: synthesized")

    boss_session = fleet.get_session(boss.child_session_key)
    assert (boss_session.spawn_depth, boss_session.role, boss_session.spawned_by) == (
        1,
        "orchestrator",
        caller,
    )
    leaves = children_of(fleet, boss.child_session_key)
    assert len(leaves) == LEAVES
    for row in leaves:
        entry = fleet.get_session(row["key"])
        assert (entry.spawn_depth, entry.role, entry.spawned_by) == (2, "leaf", boss.child_session_key)
    # Woken exactly once, with the three reports.
    kinds = [run.kind for run in runs_in(fleet, boss.child_session_key)]
    assert kinds.count("report") == 1
    wake = next(run for run in runs_in(fleet, boss.child_session_key) if run.kind == "report")
    assert wake.reply == "synthesized"
    assert len(reports_to(fleet, boss.child_session_key)) == 1  # the wake's input, all three in one
    assert reports_to(fleet, boss.child_session_key)[0].count("Status: success") == LEAVES
    # Main saw nothing of the leaves: one report, the orchestrator's.
    assert len(reports_to(fleet, caller)) == 1


def ten_trees(client: Client) -> list[tuple[str, SpawnResult]]:
    """Ten requesters, each with an orchestrator spawned: (requester, its orchestrator)."""
    callers = [requester(client) for _ in range(10)]
    return [(caller, spawn_orchestrator(client, caller)) for caller in callers]


def leaves_running(client: Client, trees: list[tuple[str, SpawnResult]]) -> bool:
    """Leaves of several trees are running (at least five)."""
    rows = [row for _, boss in trees for row in children_of(client, boss.child_session_key)]
    return sum(row["status"] == "running" for row in rows) >= 5


def each_tree_reported_once(client: Client, trees: list[tuple[str, SpawnResult]]) -> None:
    for caller, _ in trees:
        report = finished(client, caller, timeout=120)
        assert report.startswith("Status: success\nResult: synthesized"), report
    for caller, boss in trees:
        assert len(reports_to(client, caller)) == 1
        # Every leaf's report reached its orchestrator once, none lost or doubled: in one wake after its
        # yield, or, where a leaf ended before the yield (a run retried after the outage is late), as a run
        # of its own. Never two wakes.
        taken_in = reports_to(client, boss.child_session_key)
        assert sum(text.count("Status: success") for text in taken_in) == LEAVES, taken_in
        assert sum(text.startswith("Your sub-agents reported") for text in taken_in) <= 1


def test_ten_trees_at_once_survive_a_worker_killed_mid_tree(fresh: Fresh) -> None:
    fresh.start_redis(config=orchestra(maxConcurrent=16))
    doomed = fresh.worker(concurrency=8)
    fresh.worker(concurrency=8)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        trees = ten_trees(client)
        wait_for(lambda: leaves_running(client, trees), 60, what="leaves running in several trees")
        doomed.kill()  # SIGKILL: its runs' leases lapse and are taken over
        fresh.worker(concurrency=8)
        each_tree_reported_once(client, trees)


def test_ten_trees_at_once_survive_redis_restarted_twice_mid_tree(fresh: Fresh) -> None:
    """kill -9 of the only Redis (AOF, fsync always) while leaves run, twice: each kill may take a claim's,
    a commit's, a yield's or a report's reply with it, and the call repeated by the client's retry must
    answer as the first one did. Every tree still reports once, every orchestrator is woken at most once
    with every one of its leaves' reports."""
    server = fresh.start_redis(appendonly=True, config=orchestra(maxConcurrent=16))
    workers = [fresh.worker(concurrency=8), fresh.worker(concurrency=8)]
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        trees = ten_trees(client)
        for _ in range(2):
            wait_for(lambda: leaves_running(client, trees), 60, what="leaves running in several trees")
            assert server.child is not None
            server.child.kill()
            server.start()
        each_tree_reported_once(client, trees)
    # Both workers rode the restarts out (one once stopped for good as its consumer reconnected).
    assert [worker.process.poll() for worker in workers if worker.process] == [None, None]


def test_spawn_limits_are_refused_with_the_limit_named(fresh: Fresh) -> None:
    fresh.start_redis(config=orchestra(maxChildrenPerAgent=2, requireAgentId=True))
    fresh.worker(concurrency=8)
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller = requester(client)
        refused = client.invoke("sessions_spawn", {"task": "x"}, caller=caller)
        assert refused["status"] == "error"
        assert "requireAgentId" in refused["error"]
        for _ in range(2):
            assert (
                client.invoke("sessions_spawn", {"task": "leaf work", "agentId": "worker"}, caller=caller)[
                    "status"
                ]
                == "accepted"
            )
        third = client.invoke("sessions_spawn", {"task": "leaf work", "agentId": "worker"}, caller=caller)
        assert third["status"] == "forbidden"
        assert "2 children that have not ended (subagents.maxChildrenPerAgent is 2)" in third["error"]
        # A child at depth 1 of 2 is an orchestrator: its own child, at depth 2, is a leaf that may not.
        child_key = client.invoke("subagents", {"action": "list"}, caller=caller)["subagents"][0]["key"]
        grandchild = client.invoke("sessions_spawn", {"task": "x", "agentId": "worker"}, caller=child_key)
        assert grandchild["status"] == "accepted", grandchild
        deeper = client.invoke(
            "sessions_spawn", {"task": "x", "agentId": "worker"}, caller=grandchild["childSessionKey"]
        )
        assert (deeper["status"], deeper["error"]) == (
            "forbidden",
            "sessions_spawn is not allowed from sub-agent sessions at depth 2 (subagents.maxSpawnDepth is 2)",
        )


def test_max_concurrent_holds_across_two_worker_processes_and_drops_none(fresh: Fresh) -> None:
    fresh.start_redis(config=orchestra(maxConcurrent=2, maxChildrenPerAgent=6, leaf_ms=500))
    fresh.worker(concurrency=8)
    fresh.worker(concurrency=8)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller = requester(client)
        spawned = [
            SpawnResult.model_validate(
                client.invoke("sessions_spawn", {"task": "leaf work", "agentId": "worker"}, caller=caller)
            )
            for _ in range(6)
        ]
        runs = wait_for(
            lambda: (
                all(client.get_run(s.run_id).status == "ok" for s in spawned)
                and [client.get_run(s.run_id) for s in spawned]
            ),
            60,
            what="every leaf's run",
        )
    # A start and the end of the run whose slot it took, stamped by two processes, may cross by the clocks'
    # error (2 ms seen in a full-suite run): ends are taken that much early.
    spans = [(run.started_at or 0, (run.ended_at or 0) - CLOCK_ERROR_MS) for run in runs]
    overlap = max(sum(start <= t < end for start, end in spans) for t, _ in spans)
    assert overlap <= 2, spans  # never more than two at once, fleet-wide
    assert len(runs) == 6  # none dropped: every one ran, in turn


def test_killing_an_orchestrator_stops_its_five_running_leaves_within_a_second(fresh: Fresh) -> None:
    fresh.start_redis(config=orchestra(leaves=5, leaf_ms=20_000))
    fresh.worker(concurrency=8)
    fresh.worker(concurrency=8)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller = requester(client)
        boss = spawn_orchestrator(client, caller)
        wait_for(
            lambda: [r["status"] for r in children_of(client, boss.child_session_key)] == ["running"] * 5,
            60,
            what="five leaves running",
        )
        started = time.monotonic()
        killed = client.invoke(
            "subagents", {"action": "kill", "target": boss.child_session_key}, caller=caller
        )["killed"]
        assert len(killed) == 6

        def all_ended() -> bool:
            leaves = children_of(client, boss.child_session_key)
            runs = [client.get_run(client.get_session(r["key"]).spawn_flow_id or "") for r in leaves]
            return all(run.status == "aborted" for run in runs)

        wait_for(all_ended, 5, what="the leaves' runs to end")
        assert time.monotonic() - started < 1.0 + 0.5  # within a second of the kill (and the reads)
        report = finished(client, caller)
        assert report.startswith("Status: killed")
        assert (
            len(
                wait_for(
                    lambda: (
                        len(reports_to(client, boss.child_session_key)) == 5
                        and reports_to(client, boss.child_session_key)
                    ),
                    30,
                    what="the leaves' reports",
                )
            )
            == 5
        )
        assert all(r.startswith("Status: killed") for r in reports_to(client, boss.child_session_key))
        assert len(reports_to(client, caller)) == 1


def test_stop_in_main_stops_its_whole_depth_two_tree(fresh: Fresh) -> None:
    fresh.start_redis(config=orchestra(leaf_ms=20_000))
    fresh.worker(concurrency=8)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller = requester(client)
        boss = spawn_orchestrator(client, caller)
        wait_for(lambda: len(children_of(client, boss.child_session_key)) == LEAVES, 60, what="the leaves")
        peer = caller.rsplit(":", 1)[1]  # the session's own sender may stop it
        stopped = client.post_message(caller, "/stop", channel="webchat", senderId=peer)
        assert isinstance(stopped, CommandReply)
        assert stopped.status == "ok", stopped
        assert set(stopped.killed or []) == {
            boss.child_session_key,
            *(r["key"] for r in children_of(client, boss.child_session_key)),
        }
        assert finished(client, caller).startswith("Status: killed")


def test_a_steer_reaches_the_running_leafs_next_step(fresh: Fresh) -> None:
    fresh.start_redis(config=orchestra(leaf_ms=1500))
    fresh.worker(concurrency=8)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller = requester(client)
        child = SpawnResult.model_validate(
            client.invoke(
                "sessions_spawn", {"task": "leaf work", "agentId": "worker", "label": "w"}, caller=caller
            )
        )
        wait_for(lambda: client.get_run(child.run_id).status == "running", 20, what="the leaf to run")
        steered = client.invoke(
            "subagents", {"action": "steer", "target": "w", "message": "change of plan"}, caller=caller
        )
        assert steered["delivered"] == "next_step"
        run = wait_for(
            lambda: (r := client.get_run(child.run_id)).status == "ok" and r, 30, what="the leaf's run"
        )
        assert run.reply == "steered!"  # its second step saw the message
        steer = client.get_run(steered["runId"])
        assert (steer.status, steer.steered_into) == ("ok", child.run_id)
