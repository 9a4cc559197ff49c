"""Retries that never double a run, through real processes: the client's retries with its Idempotency-Key
through a proxy that loses every other answer (each call's first, where calls run at once), the same key at
two API processes at once, a chat message redelivered with its own id."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult

from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh
from tests.support.tcp_proxy import TcpProxy

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


def test_waiting_sends_retried_through_lost_answers_get_their_replies_and_run_once(fresh: Fresh) -> None:
    """Sends that wait for their reply, more of them at once than the worker takes (its runs take 200 ms):
    an answer lost is sent again with its key, and the repeat answers with the first one's run."""
    fresh.start_redis()
    fresh.worker(concurrency=2)
    _, url = fresh.api()
    keys = [f"agent:brisk:cron:idem-wait-{i}" for i in range(6)]
    with Client(url, TOKEN) as direct:
        for key in keys:
            direct.open_session(key)
    proxy = TcpProxy(urlsplit(url).port or 80)
    try:
        # Each send's first answer lost (every other one, across six threads, could lose one send's every
        # attempt: its client gives up after eight).
        proxy.lose_the_first_reply_per_key(b"POST /tools/invoke")
        with Client(f"http://127.0.0.1:{proxy.port}", TOKEN) as client, ThreadPoolExecutor(6) as pool:
            sends = [
                pool.submit(client.sessions_send, keys[i % len(keys)], f"wait {i}", timeout_seconds=30)
                for i in range(30)
            ]
            results = [future.result() for future in sends]
        lost = proxy.lost
    finally:
        proxy.close()
    replies = {result.reply for result in results if isinstance(result, SendResult) and result.status == "ok"}
    assert replies == {f"echo: wait {i}" for i in range(30)}
    assert len({result.run_id for result in results if isinstance(result, SendResult)}) == 30
    assert lost == 30
    assert created(fresh, "send") == 30


def test_a_waiting_send_repeated_at_another_api_waits_with_the_first_on_the_same_run(fresh: Fresh) -> None:
    fresh.start_redis()
    fresh.worker()
    urls = [fresh.api()[1], fresh.api()[1]]
    target = "agent:slow:cron:idem-wait-twice"  # its run takes 3 s: the repeat comes while the first waits
    with Client(urls[0], TOKEN) as client:
        client.open_session(target)
    body = {"tool": "sessions_send", "args": {"sessionKey": target, "message": "once", "timeoutSeconds": 30}}
    headers = {"Authorization": f"Bearer {TOKEN}", "Idempotency-Key": "one-wait-two-doors"}

    def post(url: str) -> dict[str, str]:
        answer = httpx.post(f"{url}/tools/invoke", json=body, headers=headers, timeout=60)
        details: dict[str, str] = answer.json()["result"]["details"]
        return details

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(post, urls[0])
        wait_for(lambda: created(fresh, "send") == 1, 10, what="the first send's run")
        again = pool.submit(post, urls[1])
        answers = [first.result(), again.result()]
    assert [(a["status"], a["reply"]) for a in answers] == [("ok", "echo: once")] * 2
    assert answers[0]["runId"] == answers[1]["runId"]
    assert created(fresh, "send") == 1
