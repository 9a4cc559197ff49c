"""Live event streams through the API: a run's events as server-sent events while a model streams its
answer slowly, resumed after a cut with Last-Event-ID, replayed after the end; a session's runs followed as
they come. Read with a real SSE client (httpx-sse)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult
from httpx_sse import connect_sse

from tests.support.fake_openai import FakeOpenAI, fake_openai, paced
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

ANSWER = "The answer streams in, piece by piece, over about two seconds of talking."


@pytest.fixture
def api(fresh: Fresh) -> Iterator[tuple[str, FakeOpenAI]]:
    with fake_openai() as model:
        model.default = lambda _body: paced(ANSWER, 2.0)
        fresh.start_redis(
            config={
                "agents": {"list": [{"id": "main", "default": True}, {"id": "gpt", "model": "fake/gpt"}]},
                "models": {
                    "providers": {"fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt"]}}
                },
            }
        )
        fresh.worker(concurrency=4)
        _, url = fresh.api()
        yield url, model


def start(client: Client, text: str = "tell me") -> str:
    sent = client.post_message(f"agent:gpt:cron:{uuid.uuid4().hex[:8]}", text, timeout_seconds=0)
    assert isinstance(sent, SendResult)
    return sent.run_id


def test_a_run_streams_every_text_delta_in_order_and_they_make_the_reply(api: tuple[str, FakeOpenAI]) -> None:
    url, _model = api
    with Client(url, TOKEN) as client:
        run_id = start(client)
        events = list(client.stream_run(run_id))
        run = client.get_run(run_id)
    types = [e["type"] for e in events]
    assert types[0] == "queued"
    assert types[-1] == "ended"
    assert "started" in types
    assert types.count("text") > 3  # it arrived in pieces, as the model wrote it
    assert "".join(e["text"] for e in events if e["type"] == "text") == run.reply == ANSWER
    ids = [e["id"] for e in events]
    assert ids == sorted(ids, key=lambda i: tuple(int(p) for p in i.split("-")))
    assert len(set(ids)) == len(ids)


def test_a_cut_stream_resumed_with_last_event_id_has_no_gap_and_no_repeat(
    api: tuple[str, FakeOpenAI],
) -> None:
    url, _model = api
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with Client(url, TOKEN) as client, httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        run_id = start(client)
        first: list[Any] = []
        with connect_sse(http, "GET", f"/v1/runs/{run_id}/stream") as source:
            for event in source.iter_sse():
                first.append(event)
                if sum(e.event == "text" for e in first) == 2:
                    break  # the connection is dropped here, mid-answer
        rest = list(client.stream_run(run_id, after=first[-1].id))
        everything = client.run_events(run_id)
    seen = [e.id for e in first] + [e["id"] for e in rest]
    assert seen == [e["id"] for e in everything]
    assert rest[-1]["type"] == "ended"


def test_a_stream_opened_after_the_end_replays_and_closes(api: tuple[str, FakeOpenAI]) -> None:
    url, _model = api
    with Client(url, TOKEN) as client:
        run_id = start(client)
        wait_for(lambda: client.get_run(run_id).status == "ok", 30, what="the run to end")
        replayed = list(client.stream_run(run_id))
        assert [e["id"] for e in replayed] == [e["id"] for e in client.run_events(run_id)]
        assert list(client.stream_run(run_id, after=replayed[-1]["id"])) == []  # nothing after the end


def test_a_session_stream_follows_its_runs_as_they_come(api: tuple[str, FakeOpenAI]) -> None:
    url, _model = api
    key = f"agent:gpt:cron:{uuid.uuid4().hex[:8]}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with Client(url, TOKEN) as client, httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        first = client.post_message(key, "one", timeout_seconds=0)
        assert isinstance(first, SendResult)
        ended: list[str] = []
        texts: dict[str, str] = {}
        with connect_sse(http, "GET", f"/v1/sessions/{key}/stream") as source:
            second = client.post_message(key, "two", timeout_seconds=0)  # a run accepted after it opened
            assert isinstance(second, SendResult)
            for event in source.iter_sse():
                if not event.data:
                    continue
                data = event.json()
                if event.event == "text":
                    texts[data["runId"]] = texts.get(data["runId"], "") + data["text"]
                if event.event == "ended":
                    ended.append(data["runId"])
                if len(ended) == 2:
                    break
    assert ended == [first.run_id, second.run_id]
    assert texts == {first.run_id: ANSWER, second.run_id: ANSWER}


def test_streams_need_the_same_rights_as_reading_the_run_or_session(api: tuple[str, FakeOpenAI]) -> None:
    url, _model = api
    with Client(url, TOKEN) as client:
        run_id = start(client)
    anonymous = httpx.get(f"{url}/v1/runs/{run_id}/stream", timeout=10)
    assert anonymous.status_code == 401
    missing = httpx.get(
        f"{url}/v1/runs/{uuid.uuid4()}/stream", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert missing.status_code == 404
