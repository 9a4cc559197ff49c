"""clients/python/clawbus_client/aio.py: the async client sends as the sync one does, and reads a run's
stream until its end."""

from __future__ import annotations

import json

import anyio
import httpx
from clawbus_client import AsyncClient
from clawbus_client.models import NotifyResult, Run, SendResult

from tests.support.fake_api import FakeApi, accepted, lost, notified, unavailable

RUN = {
    "runId": "run-1",
    "sessionKey": "agent:main:x",
    "agentId": "main",
    "kind": "send",
    "seq": 1,
    "createdAt": 1,
}


def client(api: FakeApi) -> AsyncClient:
    return AsyncClient("http://api", "token", transport=httpx.MockTransport(api))


def test_an_async_send_whose_answers_are_lost_is_sent_again_with_its_key(api: FakeApi) -> None:
    api.answers = [lost, unavailable, accepted]

    async def send() -> object:
        async with client(api) as bus:
            return await bus.sessions_send("x", "hello", timeout_seconds=0)

    result = anyio.run(send)
    assert isinstance(result, SendResult)
    assert len(set(api.keys())) == 1
    assert len(api.seen) == 3


def test_an_async_cancel_answers_the_run(api: FakeApi) -> None:
    api.answers = [lambda _r: httpx.Response(200, json={**RUN, "status": "aborted"})]

    async def cancel() -> Run:
        async with client(api) as bus:
            return await bus.cancel_run("run-1")

    assert anyio.run(cancel).status == "aborted"
    assert api.seen[0].headers.get("idempotency-key")


def test_an_async_stream_yields_each_event_until_the_run_ended(api: FakeApi) -> None:
    body = (
        'id: 1-0\nevent: text\ndata: {"text": "hel"}\n\n'
        'id: 2-0\nevent: text\ndata: {"text": "lo"}\n\n'
        'id: 3-0\nevent: ended\ndata: {"status": "ok"}\n\n'
    )
    api.answers = [lambda _r: httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})]

    async def follow() -> list[dict[str, object]]:
        async with client(api) as bus:
            return [event async for event in bus.stream_run("run-1")]

    events = anyio.run(follow)
    assert [(e["id"], e["type"]) for e in events] == [("1-0", "text"), ("2-0", "text"), ("3-0", "ended")]
    assert events[0]["text"] == "hel"


def test_an_async_notification_is_sent_with_its_mode_and_read_as_a_notify_result(api: FakeApi) -> None:
    api.answers = [notified]

    async def notify() -> object:
        async with client(api) as bus:
            return await bus.sessions_send("x", "fyi", mode="notify")

    result = anyio.run(notify)
    assert isinstance(result, NotifyResult)
    assert result.notification_id == "run-2"
    assert json.loads(api.seen[0].content)["args"]["mode"] == "notify"
