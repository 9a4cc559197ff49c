"""Retries that never double a run, through real processes: the client's retries with its Idempotency-Key
through a proxy that loses every other answer, the same key at two API processes at once, a chat message
redelivered with its own id."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult

from tests.integration.conftest import TOKEN, Fresh
from tests.support.tcp_proxy import TcpProxy
from workers.testing.processes import wait_for

pytestmark = pytest.mark.timeout(240)
SENDS = 200
SESSIONS = 20


def created(fresh: Fresh, kind: str | None = None) -> int:
    """Runs of ``kind`` (all kinds: None) the fleet created, from its counters."""
    assert fresh.redis_server is not None
    with fresh.redis_server.client() as redis:
        counts = redis.hgetall("clawbus:metrics:runs:created")
    return sum(int(n) for k, n in counts.items() if kind is None or k == kind)


def test_sends_retried_through_lost_answers_make_each_run_once(fresh: Fresh) -> None:
    fresh.start_redis()
    fresh.worker(concurrency=8)
    _, url = fresh.api()
    keys = [f"agent:main:cron:idem-{i}" for i in range(SESSIONS)]
    with Client(url, TOKEN) as direct:
        for key in keys:
            direct.open_session(key)
    proxy = TcpProxy(urlsplit(url).port or 80)
    try:
        proxy.lose_every_other_reply_to(b"POST /tools/invoke")
        with Client(f"http://127.0.0.1:{proxy.port}", TOKEN) as client:
            results = [
                client.sessions_send(keys[i % SESSIONS], f"send {i}", timeout_seconds=0) for i in range(SENDS)
            ]
        lost = proxy.lost
    finally:
        proxy.close()
    assert all(isinstance(result, SendResult) for result in results)
    run_ids = {result.run_id for result in results if isinstance(result, SendResult)}
    assert len(run_ids) == SENDS
    assert lost >= SENDS // 2  # half the answers never came back: each of those sends was sent again
    assert created(fresh, "send") == SENDS


def test_the_same_key_at_two_api_processes_at_once_makes_one_run(fresh: Fresh) -> None:
    fresh.start_redis()
    fresh.worker()
    urls = [fresh.api()[1], fresh.api()[1]]
    target = "agent:main:cron:idem-twice"
    with Client(urls[0], TOKEN) as client:
        client.open_session(target)
    body = {"tool": "sessions_send", "args": {"sessionKey": target, "message": "once", "timeoutSeconds": 0}}
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "one-key-two-doors"}

    def post(url: str) -> str:
        answer = httpx.post(f"{url}/tools/invoke", json=body, headers=headers, timeout=30)
        return str(answer.json()["result"]["details"]["runId"])

    with ThreadPoolExecutor(8) as pool:
        run_ids = set(pool.map(post, urls * 4))
    assert len(run_ids) == 1
    assert created(fresh, "send") == 1


def test_a_chat_message_redelivered_five_times_makes_one_run(fresh: Fresh) -> None:
    fresh.start_redis()
    fresh.worker()
    _, url = fresh.api()
    body = {
        "message": "hi",
        "timeoutSeconds": 0,
        "channel": "telegram",
        "to": "77",
        "messageId": "update-901",
    }
    headers = {"Authorization": f"Bearer {TOKEN}"}
    run_ids = {
        httpx.post(
            f"{url}/v1/sessions/agent:main:telegram:direct:77/messages", json=body, headers=headers
        ).json()["runId"]
        for _ in range(5)
    }
    assert len(run_ids) == 1
    assert created(fresh) == 1


def test_sends_through_an_api_killed_and_restarted_mid_stream_make_each_run_once(fresh: Fresh) -> None:
    fresh.start_redis()
    fresh.worker(concurrency=8)
    doomed, url = fresh.api()
    port = urlsplit(url).port
    target = "agent:main:cron:idem-killed"
    with Client(url, TOKEN) as client:
        client.open_session(target)
        with ThreadPoolExecutor(4) as pool:
            sending = [
                pool.submit(client.sessions_send, target, f"send {i}", timeout_seconds=0) for i in range(40)
            ]
            # Mid-stream: the API dies with requests in flight, and a new one comes up on its port.
            wait_for(lambda: sum(future.done() for future in sending) >= 10, 30, what="ten sends answered")
            doomed.kill()
            fresh.api(port)
            results = [future.result() for future in sending]
    run_ids = {result.run_id for result in results if isinstance(result, SendResult)}
    assert len(run_ids) == 40
    assert created(fresh, "send") == 40
