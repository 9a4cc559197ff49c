"""Runs that a worker holds when it fails, taken over by another worker: the world the fault tests
(tests/faults) build for that, and what they check once every run has ended.

Redis and two workers are test hosts (tests/support/hosts.py), each a network namespace of its own; the API
and beat run in the test's namespace, which reaches them all over the bridge. The numbers are issue 37's: 10
runs, a 6 s lease, and model steps of 8 s, so that a fault that comes once every run is running finds
worker-a in the middle of its runs and their commits come after the fault. Six runs are chat messages; four
are sub-agents spawned from sessions people wrote in over webchat, so each also makes a report (the child's
report turn, relayed into its requester's transcript) and a delivery (the requester's turn on it, posted to
the person), which must come once each whichever worker ran the child.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import redis
from clawbus_client import Client
from clawbus_client.models import Run, SendResult, SessionsHistoryResult, SpawnResult

from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.tools.history_view import run_of, text_of
from tests.support import hosts
from tests.support.exchanges import finished, requester
from tests.support.processes import Role, role_env, start_api, start_beat, wait_for, write_config
from tests.support.stack import TOKEN

RUNS = 10
SPAWNS = 4  # of the RUNS
# Runs a spawn makes besides its child's: its requester's first message and the requester's turn on the
# report (the child's latest reply is its report: no turn of the child's).
RUNS_A_SPAWN_ADDS = 2
THREADS = 5  # a worker's; with a prefetch of one a thread, each worker takes five of the ten runs
STEP_SECONDS = 8
LEASE_SECONDS = 6
CONFIG = {
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    "agents": {
        "list": [
            {"id": "main", "default": True, "subagents": {"allowAgents": ["slow"]}},
            {"id": "slow", "model": "slow/echo"},
        ]
    },
    "models": {"providers": {"slow": {"type": "echo", "delayMs": STEP_SECONDS * 1000}}},
    "runs": {"leaseSeconds": LEASE_SECONDS, "dispatchGraceSeconds": 5, "reapIntervalSeconds": 1},
}


@dataclass(frozen=True, slots=True)
class World:
    redis_url: str
    # The worker the fault happens to, its host, the other worker, and the API's URL.
    worker_a: hosts.Host
    a: Role
    b: Role
    url: str


class Sent(NamedTuple):
    key: str
    run_id: str
    text: str
    # A spawned child's requester session and the person its announce is posted to.
    requester: tuple[str, str] | None = None


def start(
    network: hosts.Network,
    roles: list[Role],
    directory: Path,
    clocks: tuple[dict[str, str], dict[str, str]] = ({}, {}),
) -> World:
    """Redis and two workers on hosts of their own, beat and the API here, each in ``roles`` once started.
    ``clocks``: what each worker's environment adds to set its host's clock (tests/support/skewed_clock.py)."""
    redis_role, redis_url = hosts.start_redis(network.host("redis"), directory / "redis")
    roles.append(redis_role)
    env = role_env(redis_url, write_config(directory, CONFIG), directory / "home", TOKEN)
    worker_a, worker_b = network.host("worker-a"), network.host("worker-b")
    a = hosts.start_worker(worker_a, {**env, **clocks[0]}, directory, concurrency=THREADS)
    roles.append(a)
    b = hosts.start_worker(worker_b, {**env, **clocks[1]}, directory, concurrency=THREADS)
    roles.append(b)
    roles.append(start_beat(env, directory, directory / "home"))
    api, url = start_api(env, directory)
    roles.append(api)
    return World(redis_url, worker_a, a, b, url)


def _send(client: Client, text: str) -> Sent:
    """A chat message to the slow agent in a session of its own (a session runs one run at a time), its run
    not waited for."""
    key = f"agent:slow:cron:{uuid.uuid4().hex[:10]}"
    sent = client.post_message(key, text, timeout_seconds=0)
    assert isinstance(sent, SendResult), sent
    return Sent(key, sent.run_id, text)


def _spawn(client: Client, task: str) -> Sent:
    """A child of the slow agent, spawned from a session someone wrote in over webchat."""
    caller, peer = requester(client)
    args = {"task": task, "agentId": "slow"}
    spawned = SpawnResult.model_validate(client.invoke("sessions_spawn", args, caller=caller))
    assert spawned.status == "accepted", spawned
    return Sent(spawned.child_session_key, spawned.run_id, task, (caller, peer))


def running(client: Client, label: str) -> list[Sent]:
    """RUNS runs sent (SPAWNS of them spawned children), once every one is running: five on each worker."""
    sent = [_send(client, f"{label} {i}") for i in range(RUNS - SPAWNS)]
    sent += [_spawn(client, f"{label} {i}") for i in range(RUNS - SPAWNS, RUNS)]
    wait_for(lambda: _all_running(client, sent), 30, what=f"every {label} run running")
    return sent


def _all_running(client: Client, sent: list[Sent]) -> bool:
    return all(client.get_run(run.run_id).status == "running" for run in sent)


def all_ended(client: Client, sent: list[Sent]) -> list[Run]:
    """The runs once every one has ended; none (nothing for ``wait_for``) until then."""
    runs = [client.get_run(run.run_id) for run in sent]
    return runs if all(run.status.terminal for run in runs) else []


def finished_by_b(client: Client, sent: list[Sent], fault: str) -> list[str]:
    """Once worker-b has finished every run while worker-a is ``fault`` (cut off, stopped): the runs it
    claimed again (a second attempt) after worker-a lost them. worker-b's own ran once."""
    ended = wait_for(
        lambda: all_ended(client, sent),
        60,
        what=f"worker-b to finish every run, worker-a's taken over, while worker-a is {fault}",
    )
    assert {run.attempts for run in ended} == {1, 2}, f"worker-a held no run when it was {fault}"
    return [run.run_id for run in ended if run.attempts == 2]


def held_for(since: float, seconds: float, fault: str) -> None:
    """Returns once ``seconds`` have passed since ``since`` (monotonic): a fault lasts its full length."""
    wait_for(lambda: time.monotonic() - since >= seconds, seconds, what=f"the {fault}'s end")


def refused(a: Role, run_ids: list[str]) -> bool:
    """Whether worker-a has logged, for each of ``run_ids``, that its write was fenced off."""
    output = a.output()
    return all(f"run {run_id}: lease lost" in output for run_id in run_ids)


def check_ended_once(client: Client, redis_url: str, sent: list[Sent], taken: list[str]) -> None:
    """Every run ended ok once, on the attempt it was meant to, with its message and reply in its session's
    transcript once each; a spawned child's report in its requester's transcript once and its announce
    posted once; one ended event a run; the runs-finished counter counts one commit a run."""
    for key, run_id, text, spawned_from in sent:
        run = client.get_run(run_id)
        assert (run.status, run.attempts) == ("ok", 2 if run_id in taken else 1)
        message, reply = _texts(client, key, run_id)
        assert text in message
        assert reply == f"echo: {message}"
        if spawned_from is not None:
            _reported_once(client, run_id, *spawned_from)
    store = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        keys = RedisKeys()
        for one in sent:
            events = store.xrange(keys.run_events(one.run_id))
            assert [fields["status"] for _, fields in events if fields.get("type") == "ended"] == ["ok"]
        # The counter's fields are kind:status.
        finished: Counter[str] = Counter()
        for kind, n in store.hgetall(keys.metrics_runs_finished()).items():
            finished[kind.rpartition(":")[2]] += int(n)
        spawns = sum(one.requester is not None for one in sent)
        assert finished == {"ok": len(sent) + spawns * RUNS_A_SPAWN_ADDS}
    finally:
        store.close()


def _reported_once(client: Client, run_id: str, caller: str, peer: str) -> None:
    """The child's flow is done, its report is in the requester's transcript once, and the requester's
    turn on it was posted to the person once."""
    finished(client, run_id, timeout=60)
    history = client.sessions_history(caller)
    assert isinstance(history, SessionsHistoryResult)
    reports = [m for m in history.messages if m.get("provenance", {}).get("kind") == "subagent_announce"]
    assert len(reports) == 1, f"{len(reports)} reports of child run {run_id}"
    posted = [m["text"] for m in client.channel_messages("webchat", peer)]
    assert posted == [f"echo: {text_of(reports[0])}"], f"announce of child run {run_id} posted {posted}"


def _texts(client: Client, key: str, run_id: str) -> list[str]:
    result = client.sessions_history(key)
    assert isinstance(result, SessionsHistoryResult)
    return [text_of(m) for m in result.messages if run_of(m) == run_id]
