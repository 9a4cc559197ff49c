"""Durability: nothing accepted is lost when a worker, the API or Redis goes away mid-flight."""

from __future__ import annotations

import base64
import json
import subprocess
import uuid

from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from clawbus.shared.tools.history_view import run_of, text_of
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh


def slow_key(client: Client) -> str:
    """A fresh session of the slow agent, opened (a send opens none)."""
    return client.open_session(f"agent:slow:cron:{uuid.uuid4().hex[:10]}").key


def texts(client: Client, key: str, run_id: str | None = None) -> list[str]:
    """The session's transcript texts (``run_id``'s only: its flow's announce may follow in the session)."""
    result = client.sessions_history(key)
    assert isinstance(result, SessionsHistoryResult)
    return [text_of(m) for m in result.messages if run_id is None or run_of(m) == run_id]


def pool_children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def start_slow_run(client: Client, text: str) -> tuple[str, str]:
    """A 3 s run, returned once a worker is executing it: (session key, run id)."""
    key = slow_key(client)
    sent = client.sessions_send(key, text, timeout_seconds=0)
    assert isinstance(sent, SendResult)
    wait_for(lambda: client.get_run(sent.run_id).status == "running", 20, what="the run to start")
    return key, sent.run_id


def assert_finished_exactly_once(client: Client, key: str, run_id: str, text: str, timeout: float) -> None:
    run = client.wait_run(run_id, timeout=timeout)
    assert run is not None
    assert run.status == "ok"
    assert run.attempts == 2
    assert texts(client, key, run_id) == [text, f"echo: {text}"]


def test_a_worker_killed_mid_run_is_finished_by_another_worker(fresh: Fresh) -> None:
    fresh.start_redis()
    doomed = fresh.worker()
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        key, run_id = start_slow_run(client, "survive a crash")
        doomed.kill()  # SIGKILL to the worker and its pool: its message stays unacknowledged
        fresh.worker()
        assert_finished_exactly_once(client, key, run_id, "survive a crash", timeout=40)


def test_a_killed_pool_child_is_retried_at_once_without_the_reaper(fresh: Fresh) -> None:
    fresh.start_redis()
    worker = fresh.worker(concurrency=1, pool="prefork")  # pool children exist only in a prefork pool
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        key, run_id = start_slow_run(client, "lose a child")
        assert worker.process is not None
        for child in pool_children(worker.process.pid):
            subprocess.run(["kill", "-9", str(child)], check=False)
        assert_finished_exactly_once(client, key, run_id, "lose a child", timeout=30)


def test_accepted_runs_survive_a_redis_restart(fresh: Fresh) -> None:
    server = fresh.start_redis(appendonly=True)
    _, url = fresh.api()
    key = f"agent:main:cron:{uuid.uuid4().hex[:8]}"
    with Client(url, TOKEN) as client:
        client.open_session(key)  # a send opens no session
        run_ids = []
        for i in range(3):
            sent = client.sessions_send(key, f"keep {i}", timeout_seconds=0)
            assert isinstance(sent, SendResult)
            run_ids.append(sent.run_id)
        redis = server.client()
        try:
            queued = [json.loads(m) for m in redis.lrange("runs", 0, -1)]
        finally:
            redis.close()
        # Only the lane head is enqueued, and a task carries ids, never state.
        assert len(queued) == 1
        args, kwargs, _embed = json.loads(base64.b64decode(queued[0]["body"]))
        assert (args, kwargs) == ([run_ids[0], key], {})
        server.stop()
        server.start()
        fresh.worker()
        runs = [client.wait_run(run_id, timeout=30) for run_id in run_ids]
        assert all(run is not None and run.status == "ok" for run in runs)
        transcript = client.sessions_history(key)
        assert isinstance(transcript, SessionsHistoryResult)
        ours = [text_of(m) for m in transcript.messages if run_of(m) in run_ids]
        assert ours == [t for i in range(3) for t in (f"keep {i}", f"echo: keep {i}")]
