"""Server-side waits: the pub/sub multiplexer against a real Redis and real API processes."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from pathlib import Path

import httpx
from clawbus_client import Client
from clawbus_client.models import SendResult

from clawbus.api.services import WAITS_CLIENT_NAME
from clawbus.api.waits import RunWaiter
from clawbus.shared.config import RedisConfig
from clawbus.shared.store.codec import encode
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.live import LiveStore
from clawbus.shared.wire.models import Run, RunStatus
from tests.support.processes import RedisServer, free_port, wait_for
from tests.support.runs import a_run
from tests.support.stack import TOKEN, Fresh, Stack


def slow_key(client: Client) -> str:
    """A fresh session of the slow agent, opened (a send opens none)."""
    return client.open_session(f"agent:slow:cron:{uuid.uuid4().hex[:10]}").key


def test_a_waiter_whose_run_finished_before_it_subscribed_returns_at_once(client: Client) -> None:
    key = client.open_session(f"agent:main:cron:{uuid.uuid4().hex[:8]}").key  # a send opens no session
    result = client.sessions_send(key, "quick", timeout_seconds=0)
    assert isinstance(result, SendResult)
    wait_for(lambda: client.get_run(result.run_id).status == "ok", 20, what="the run to end")
    started = time.monotonic()
    run = client.wait_run(result.run_id, timeout=10)
    assert run is not None
    assert run.reply == "echo: quick"
    assert time.monotonic() - started < 5.0  # answered from the hash, far from the 10 s timeout


def test_a_wait_timeout_answers_timeout_and_never_touches_the_run(client: Client) -> None:
    result = client.sessions_send(slow_key(client), "slowly", timeout_seconds=0)
    assert isinstance(result, SendResult)
    assert client.wait_run(result.run_id, timeout=0.5) is None
    assert client.get_run(result.run_id).status in ("queued", "running")
    finished = client.wait_run(result.run_id, timeout=20)
    assert finished is not None
    assert finished.status == "ok"


def test_many_waiters_share_one_pubsub_connection(stack: Stack, client: Client) -> None:
    key = f"agent:brisk:cron:{uuid.uuid4().hex[:8]}"  # 20 runs of 0.2 s in one lane: waits stay pending
    client.open_session(key)
    run_ids = []
    for i in range(20):
        result = client.sessions_send(key, f"m{i}", timeout_seconds=0)
        assert isinstance(result, SendResult)
        run_ids.append(result.run_id)
    results: list[Run | None] = []

    def wait(run_id: str) -> None:
        with stack.client() as own:
            results.append(own.wait_run(run_id, timeout=30))

    threads = [threading.Thread(target=wait, args=(run_id,)) for run_id in run_ids]
    for thread in threads:
        thread.start()
    redis = stack.redis()
    try:
        wait_for(lambda: len(redis.pubsub_channels("clawbus:run-done:*")) > 1, 10, what="waits to subscribe")
        subscribed = [c for c in redis.client_list() if int(c.get("sub", 0)) > 0]
        # The one API process's multiplexer, whatever the number of waiters (every connection of its
        # LiveStore carries that name); the others are the workers' cancel listeners, on one channel each.
        assert [c["name"] for c in subscribed].count(WAITS_CLIENT_NAME) == 1
        assert all(int(c["sub"]) == 1 for c in subscribed if c["name"] != WAITS_CLIENT_NAME)
    finally:
        redis.close()
    for thread in threads:
        thread.join(60)
    assert len(results) == 20
    assert all(r is not None and r.status == "ok" for r in results)


def test_a_wait_survives_its_pubsub_connection_being_killed(stack: Stack, client: Client) -> None:
    result = client.sessions_send(slow_key(client), "through a reconnect", timeout_seconds=0)
    assert isinstance(result, SendResult)
    outcome: list[Run | None] = []
    waiter = threading.Thread(target=lambda: outcome.append(client.wait_run(result.run_id, timeout=25)))
    started = time.monotonic()
    waiter.start()
    redis = stack.redis()
    try:
        channel = f"clawbus:run-done:{result.run_id}"
        wait_for(lambda: redis.pubsub_numsub(channel)[0][1] == 1, 10, what="the wait to subscribe")
        waits_connection = [
            c for c in redis.client_list() if c["name"] == WAITS_CLIENT_NAME and c["sub"] != "0"
        ]
        assert len(waits_connection) == 1
        redis.client_kill_filter(_id=waits_connection[0]["id"])
    finally:
        redis.close()
    waiter.join(30)
    assert outcome
    assert outcome[0] is not None
    assert outcome[0].status == "ok"
    assert time.monotonic() - started < 10  # woken by the re-subscribed channel, not by the 25 s deadline


def test_the_api_restarted_between_send_and_wait_still_answers_the_wait(fresh: Fresh) -> None:
    fresh.start_redis()
    fresh.worker()
    port = free_port()
    first, url = fresh.api(port)
    with Client(url, TOKEN) as client:
        sent = client.sessions_send(slow_key(client), "outlive the API", timeout_seconds=0)
    assert isinstance(sent, SendResult)
    first.stop()
    _, url = fresh.api(port)
    with Client(url, TOKEN) as client:
        run = client.wait_run(sent.run_id, timeout=20)
    assert run is not None
    assert run.status == "ok"
    assert run.reply == "echo: outlive the API"


def test_an_api_process_answers_waits_for_runs_another_one_accepted(stack: Stack, fresh: Fresh) -> None:
    fresh.env = stack.env
    _, other_url = fresh.api()
    with Client(stack.url, TOKEN) as client:
        sent = client.sessions_send(slow_key(client), "cross-process", timeout_seconds=0)
    assert isinstance(sent, SendResult)
    response = httpx.get(
        f"{other_url}/v1/runs/{sent.run_id}/wait",
        params={"timeout": 20},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert response.json()["status"] == "ok"


def test_waits_begun_while_redis_restarts_raise_nothing_and_hear_their_runs_end(tmp_path: Path) -> None:
    """A wave of waits begins every 20 ms while Redis is killed and started again (the API's side of a
    failover): none may fail (an HTTP 500 or 503 to a caller owed an answer), and each hears its run end.
    redis-py lets any command on the shared pub/sub connection reconnect it, and a waiter reconnecting it
    while the reader did raised RuntimeError; and after the reconnect every wait read its run at once, past
    the connection pool's limit."""
    server = RedisServer(tmp_path / "redis", appendonly=True).start()
    keys = RedisKeys("clawbus-test:")
    runs = [str(uuid.uuid4()) for _ in range(400)]
    writer = server.client()
    for run_id in runs:
        writer.hset(keys.run(run_id), mapping=encode(a_run(run_id, RunStatus.RUNNING)))
    writer.close()

    async def scenario() -> list[Run | BaseException | None]:
        live = LiveStore(RedisConfig(url=server.url), keys, client_name="test-waits")
        waiter = RunWaiter(live)
        await waiter.start()
        try:
            waits, restarted = [], None
            for wave, start in enumerate(range(0, len(runs), 10)):
                if wave == 5:
                    assert server.child is not None
                    server.child.kill()
                if wave == 15:  # waits go on beginning while it starts
                    restarted = asyncio.create_task(asyncio.to_thread(server.start))
                waits += [asyncio.create_task(waiter.wait(r, timeout=30)) for r in runs[start : start + 10]]
                await asyncio.sleep(0.02)  # the pace of the waves
            assert restarted is not None
            await restarted
            await asyncio.to_thread(_end, server, keys, runs)
            return await asyncio.gather(*waits, return_exceptions=True)
        finally:
            await waiter.close()
            await live.close()

    started = time.monotonic()
    try:
        outcomes = asyncio.run(scenario())
    finally:
        server.stop()
    failed = [repr(o) for o in outcomes if not isinstance(o, Run)]
    assert failed == []
    assert {o.status for o in outcomes if isinstance(o, Run)} == {RunStatus.OK}
    assert time.monotonic() - started < 20  # heard, not found at the 30 s deadline


def _end(server: RedisServer, keys: RedisKeys, runs: list[str]) -> None:
    """End every run as a commit does: the terminal hash, then its completion signal."""
    redis = server.client()
    try:
        for run_id in runs:
            ended = encode(a_run(run_id, RunStatus.OK))
            redis.hset(keys.run(run_id), mapping=ended)
            redis.publish(keys.run_done_channel(run_id), json.dumps(ended))
    finally:
        redis.close()
