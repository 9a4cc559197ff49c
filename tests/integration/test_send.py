"""sessions_send and inbound messages through the real stack: API process -> Redis queue -> worker."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import redis
from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from clawbus.shared.tools.history_view import run_of, text_of
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh, Stack


def unique(prefix: str = "agent:main:cron") -> str:
    return f"{prefix}:{uuid.uuid4().hex[:10]}"


def history_texts(client: Client, key: str) -> list[str]:
    result = client.sessions_history(key, limit=1000)
    assert isinstance(result, SessionsHistoryResult)
    return [text_of(m) for m in result.messages]


def test_send_with_zero_timeout_returns_accepted_and_the_reply_appears_in_history(client: Client) -> None:
    key = unique()
    client.open_session(key)
    result = client.sessions_send(key, "fire and forget", timeout_seconds=0)
    assert isinstance(result, SendResult)
    assert result.status == "accepted"
    assert result.delivery is not None
    assert result.delivery.status == "pending"
    assert wait_for(
        lambda: history_texts(client, key)[:2] == ["fire and forget", "echo: fire and forget"],
        20,
        what="the reply in history",
    )


def test_send_with_a_wait_returns_ok_and_the_reply(client: Client) -> None:
    key = unique()
    client.open_session(key)
    result = client.sessions_send(key, "are you there?", timeout_seconds=20)
    assert isinstance(result, SendResult)
    assert (result.status, result.reply) == ("ok", "echo: are you there?")


def test_a_1s_wait_on_a_3s_run_is_accepted_and_a_later_wait_returns_ok(client: Client) -> None:
    key = unique("agent:slow:cron")
    client.open_session(key)
    started = time.monotonic()
    result = client.sessions_send(key, "take your time", timeout_seconds=1)
    assert isinstance(result, SendResult)
    # A wait that ran out is answered as the release answers it: accepted, the run under way.
    assert (result.status, result.target_disposition) == ("accepted", "queued")
    assert time.monotonic() - started >= 1.0  # it did wait its second
    # ... and answered before the run ended: the 3 s run was still going when the timeout came back.
    assert client.get_run(result.run_id).status in ("queued", "running")
    run = client.wait_run(result.run_id, timeout=20)
    assert run is not None
    assert run.status == "ok"
    assert run.reply == "echo: take your time"


def test_20_concurrent_sends_into_one_session_give_20_whole_turns_in_order(
    client: Client, stack: Stack
) -> None:
    key = unique()
    client.open_session(key)

    def send(i: int) -> str:
        with stack.client() as own:
            result = own.sessions_send(key, f"message {i}", timeout_seconds=0)
        assert isinstance(result, SendResult)
        return result.run_id

    with ThreadPoolExecutor(max_workers=20) as pool:
        run_ids = list(pool.map(send, range(20)))
    runs = [client.wait_run(run_id, timeout=30) for run_id in run_ids]
    assert all(run is not None and run.status == "ok" for run in runs)
    accepted_order = [run.run_id for run in sorted(runs, key=lambda r: r.seq)]  # type: ignore[union-attr]
    for run_id in run_ids:  # each send's flow (its announce runs in this session too) has ended
        wait_for(lambda r=run_id: client.get_flow(r).status == "done", 30, what="the flows to end")
    transcript = client.sessions_history(key, limit=1000)
    assert isinstance(transcript, SessionsHistoryResult)
    # The flows' announce runs take turns in this session too (history shows their replies, not their
    # step prompts); every turn of a send is whole wherever it falls: its input, then its reply.
    every = transcript.messages
    places = [i for i, m in enumerate(every) if run_of(m) in set(run_ids)]
    assert all(places[i + 1] == places[i] + 1 for i in range(0, len(places), 2))
    messages = [every[i] for i in places]
    assert len(messages) == 40
    for turn, run_id in enumerate(accepted_order):
        user, assistant = messages[2 * turn], messages[2 * turn + 1]
        assert (user["role"], user["senderLabel"], assistant["role"]) == (
            "assistant",
            "Forwarded from main",
            "assistant",
        )
        assert run_of(user) == run_of(assistant) == run_id
        assert text_of(assistant) == "echo: " + text_of(user)
    started = [run.started_at for run in sorted(runs, key=lambda r: r.seq)]  # type: ignore[union-attr]
    ended = [run.ended_at for run in sorted(runs, key=lambda r: r.seq)]  # type: ignore[union-attr]
    assert all(e <= s for e, s in zip(ended, started[1:], strict=False))  # never two at once


def test_an_inbound_message_records_the_route_and_gets_the_agents_reply(client: Client) -> None:
    key = unique("agent:research:webchat:direct")
    result = client.post_message(key, "hello research", channel="webchat", to="visitor-1", timeout_seconds=20)
    assert isinstance(result, SendResult)
    assert result.reply == "echo: hello research"
    entry = client.get_session(key)
    assert entry.delivery_context is not None
    assert entry.delivery_context.to == "visitor-1"
    assert entry.last_channel == "webchat"
    assert entry.kind == "other"


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, redis.Redis]]:
    """An API on a Redis of its own, with no worker: nothing but the request under test writes to it (the
    shared stack's earlier tests left flows and lanes that went on writing, and draining them took up to
    minutes)."""
    fresh = Fresh(tmp_path_factory.mktemp("quiet"))
    try:
        server = fresh.start_redis()
        _, url = fresh.api()
        with server.client() as client:
            yield url, client
    finally:
        fresh.close()


def _snapshot(client: redis.Redis) -> dict[str, Any]:
    # The API's own heartbeats change with time, not with requests.
    beats = ("clawbus:worker:", "clawbus:reaper:", "clawbus:maintenance:")
    keys = sorted(k for k in client.keys("clawbus:*") if not k.startswith(beats))
    return {key: client.dump(key) for key in keys} | {"queues": [client.llen(q) for q in ("runs", "nested")]}


UNKNOWN_ID = "0b1f6a3e-1111-4222-8333-444455556666"


@pytest.mark.parametrize(
    ("args", "status", "expected"),
    [
        ({"sessionKey": "cron:x"}, 400, "message required"),
        (
            {"sessionKey": "cron:x", "label": "l", "message": "m"},
            200,
            "Provide either sessionKey or label (not both).",
        ),
        ({"message": "m"}, 200, "Either sessionKey or label is required"),
        (
            {"sessionKey": UNKNOWN_ID, "message": "m"},
            200,
            f"Session not found: {UNKNOWN_ID} (use the full sessionKey from sessions_list)",
        ),
        (
            {"sessionKey": "cron:never-opened", "message": "m", "timeoutSeconds": 0},
            200,
            "No session found: agent:main:cron:never-opened",
        ),
        (
            {"sessionKey": "cron:x", "message": "m", "timeoutSeconds": -1},
            400,
            "timeoutSeconds must be a non-negative integer",
        ),
        (
            {"sessionKey": "cron:x", "message": "x" * 10_000_000},
            400,
            "message: too large: 10000000 bytes (limit 262144)",
        ),
    ],
    ids=[
        "missing-message",
        "key-and-label",
        "neither",
        "unknown-session-id",
        "session-never-opened",
        "negative-timeout",
        "10MB-message",
    ],
)
def test_bad_inputs_get_the_spec_error_and_leave_redis_unchanged(
    quiet: tuple[str, redis.Redis], args: dict[str, Any], status: int, expected: str
) -> None:
    url, client = quiet
    before = _snapshot(client)
    response = httpx.post(
        f"{url}/tools/invoke",
        json={"tool": "sessions_send", "args": args},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert response.status_code == status
    body = response.json()
    if status == 200:
        assert body["result"]["details"]["status"] == "error"
        assert body["result"]["details"]["error"] == expected
        assert body["result"]["details"]["runId"]
    else:
        assert body["ok"] is False
        assert body["error"]["message"] == expected
    assert _snapshot(client) == before
