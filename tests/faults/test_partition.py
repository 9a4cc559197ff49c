"""A worker cut off from the network mid-run comes back harmless (issue 37): its leases lapse, the other
worker takes its runs over and finishes them, and when the link comes back every write the cut-off worker
still makes for those runs is refused by the lease's fencing token (docs/architecture.md, "Reliability").

Redis and the two workers are test hosts (tests/support/hosts.py), each a network namespace of its own; the
API and beat run in the test's namespace, which reaches them all over the bridge. The numbers are the
issue's: 10 runs, a 6 s lease, a cut of 30 s (longer only if worker-b needs longer to finish), and model
steps of 8 s, so that the cut comes while worker-a is in the middle of its runs and their commits are sent
into the cut. The runs are chat messages, not sends between agents: no flow, so no deliveries or reports to
count.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import redis
from clawbus_client import Client
from clawbus_client.models import Run, SendResult, SessionsHistoryResult

from shared.store.keys import RedisKeys
from shared.tools.history_view import run_of, text_of
from tests.support import hosts
from tests.support.processes import Role, role_env, start_api, start_beat, wait_for, write_config
from tests.support.stack import TOKEN

RUNS = 10
THREADS = 5  # a worker's; with a prefetch of one a thread, each worker takes five of the ten runs
STEP_SECONDS = 8
LEASE_SECONDS = 6
CUT_SECONDS = 30
CONFIG = {
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    "agents": {"list": [{"id": "main", "default": True}, {"id": "slow", "model": "slow/echo"}]},
    "models": {"providers": {"slow": {"type": "echo", "delayMs": STEP_SECONDS * 1000}}},
    "runs": {"leaseSeconds": LEASE_SECONDS, "dispatchGraceSeconds": 5, "reapIntervalSeconds": 1},
}


def test_a_partitioned_worker_comes_back_harmless(
    network: hosts.Network, roles: list[Role], tmp_path: Path
) -> None:
    redis_role, redis_url = hosts.start_redis(network.host("redis"), tmp_path / "redis")
    roles.append(redis_role)
    env = role_env(redis_url, write_config(tmp_path, CONFIG), tmp_path / "home", TOKEN)
    worker_a, worker_b = network.host("worker-a"), network.host("worker-b")
    a = hosts.start_worker(worker_a, env, tmp_path, concurrency=THREADS)
    roles.append(a)
    roles.append(hosts.start_worker(worker_b, env, tmp_path, concurrency=THREADS))
    roles.append(start_beat(env, tmp_path, tmp_path / "home"))
    api, url = start_api(env, tmp_path)
    roles.append(api)

    with Client(url, TOKEN) as client:
        sent = [_send(client, f"partition {i}") for i in range(RUNS)]
        wait_for(
            lambda: all(client.get_run(run_id).status == "running" for _, run_id, _ in sent),
            30,
            what="every run running, five on each worker",
        )
        network.cut(worker_a)
        cut_at = time.monotonic()
        ended = wait_for(
            lambda: _all_ended(client, [run_id for _, run_id, _ in sent]),
            60,
            what="worker-b to finish every run, worker-a's taken over, while worker-a is cut off",
        )
        # worker-a's runs were claimed again by worker-b (a second attempt), worker-b's own ran once.
        assert {run.attempts for run in ended} == {1, 2}, "worker-a held no run when it was cut off"
        taken_over = [run.run_id for run in ended if run.attempts == 2]
        # The cut lasts at least its full length (the scenario), then worker-a's link comes back.
        wait_for(lambda: time.monotonic() - cut_at >= CUT_SECONDS, CUT_SECONDS, what="the cut's end")
        network.heal(worker_a)

        # worker-a's steps ended in the cut; their commits (memo and end in one pipeline), sent then, reach
        # Redis now and are refused: worker-b's claims took new fencing tokens.
        wait_for(
            lambda: all(f"run {run_id}: lease lost" in a.output() for run_id in taken_over),
            45,
            what="worker-a's late writes refused",
        )
        assert not a.exited(), a.output()[-3000:]
        for key, run_id, text in sent:
            run = client.get_run(run_id)
            assert (run.status, run.attempts) == ("ok", 2 if run_id in taken_over else 1)
            assert _texts(client, key, run_id) == [text, f"echo: {text}"]

    store = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        keys = RedisKeys()
        for _, run_id, _ in sent:
            events = store.xrange(keys.run_events(run_id))
            assert [fields["status"] for _, fields in events if fields.get("type") == "ended"] == ["ok"]
        # The runs-finished counter (kind:status) counts each commit: ten runs, ten commits, all ok.
        finished = store.hgetall(keys.metrics_runs_finished())
        assert [(kind.rpartition(":")[2], int(n)) for kind, n in finished.items()] == [("ok", RUNS)]
    finally:
        store.close()


def _send(client: Client, text: str) -> tuple[str, str, str]:
    """A chat message to the slow agent in a session of its own (a session runs one run at a time), its
    run not waited for: (session key, run id, text)."""
    key = f"agent:slow:cron:{uuid.uuid4().hex[:10]}"
    sent = client.post_message(key, text, timeout_seconds=0)
    assert isinstance(sent, SendResult), sent
    return key, sent.run_id, text


def _all_ended(client: Client, run_ids: list[str]) -> list[Run] | None:
    runs = [client.get_run(run_id) for run_id in run_ids]
    return runs if all(run.status.terminal for run in runs) else None


def _texts(client: Client, key: str, run_id: str) -> list[str]:
    result = client.sessions_history(key)
    assert isinstance(result, SessionsHistoryResult)
    return [text_of(m) for m in result.messages if run_of(m) == run_id]
