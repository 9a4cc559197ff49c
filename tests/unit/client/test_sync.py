"""clients/python/clawbus_client/sync.py: a call that creates work is sent again with the same key while its
answer is lost; a read is sent once; refusals are ClawbusErrors."""

from __future__ import annotations

import json

import httpx
import pytest
from clawbus_client import APIError, Client
from clawbus_client.models import NotifyResult, SendResult

from tests.support.fake_api import FakeApi, accepted, lost, notified, steered, unavailable


def client(api: FakeApi) -> Client:
    return Client("http://api", "token", transport=httpx.MockTransport(api))


def test_a_send_whose_answers_are_lost_is_sent_again_with_its_key_until_answered(api: FakeApi) -> None:
    api.answers = [lost, unavailable, lost, accepted]
    result = client(api).sessions_send("x", "hello", timeout_seconds=0)
    assert isinstance(result, SendResult)
    assert result.run_id == "run-1"
    keys = api.keys()
    assert len(keys) == 4
    assert keys[0] is not None
    assert set(keys) == {keys[0]}


def test_two_sends_carry_two_keys(api: FakeApi) -> None:
    api.answers = [accepted]
    bus = client(api)
    bus.sessions_send("x", "one", timeout_seconds=0)
    bus.sessions_send("x", "two", timeout_seconds=0)
    first, second = api.keys()
    assert first != second


def test_the_callers_own_key_is_the_one_sent(api: FakeApi) -> None:
    api.answers = [accepted]
    client(api).sessions_send("x", "hello", timeout_seconds=0, idempotency_key="order-17")
    assert api.keys() == ["order-17"]


def test_a_read_carries_no_key_and_is_not_sent_again(api: FakeApi) -> None:
    api.answers = [unavailable]
    with pytest.raises(APIError) as refused:
        client(api).get_session("x")
    assert refused.value.status == 503
    assert api.keys() == [None]


def test_a_refusal_is_raised_with_its_type_field_and_message(api: FakeApi) -> None:
    error = {"type": "invalid_request", "message": "Idempotency-Key k was used for another request"}
    api.answers = [lambda _r: httpx.Response(422, json={"error": {**error, "field": "Idempotency-Key"}})]
    with pytest.raises(APIError) as refused:
        client(api).cancel_run("run-1")
    assert (refused.value.status, refused.value.type, refused.value.field) == (
        422,
        "invalid_request",
        "Idempotency-Key",
    )
    assert len(api.seen) == 1


def _sent_args(request: httpx.Request) -> dict[str, object]:
    args: dict[str, object] = json.loads(request.content)["args"]
    return args


def test_a_plain_send_names_no_mode_and_no_watch(api: FakeApi) -> None:
    api.answers = [accepted]
    client(api).sessions_send("x", "hello", timeout_seconds=0)
    assert {"mode", "watch"}.isdisjoint(_sent_args(api.seen[0]))


def test_a_notification_is_sent_with_its_mode_and_read_as_a_notify_result(api: FakeApi) -> None:
    api.answers = [notified]
    result = client(api).sessions_send("x", "fyi", mode="notify", watch=True)
    assert isinstance(result, NotifyResult)
    assert (result.status, result.notification_id, result.session_key) == ("queued", "run-2", "agent:main:x")
    assert (result.durability, result.run_started) == ("durable", False)
    assert _sent_args(api.seen[0]) == {
        "sessionKey": "x",
        "message": "fyi",
        "timeoutSeconds": 30,
        "mode": "notify",
        "watch": True,
    }
    assert api.keys()[0] is not None  # it creates work: sent with a key


def test_a_steer_is_read_as_a_send_result_steered_and_not_waited_for(api: FakeApi) -> None:
    api.answers = [steered]
    result = client(api).sessions_send("x", "also this", mode="steer", timeout_seconds=60)
    assert isinstance(result, SendResult)
    assert (result.status, result.target_disposition, result.watched) == ("accepted", "steered", None)
    assert _sent_args(api.seen[0])["mode"] == "steer"
    # Answered on its admission: the request's timeout holds no 60 s wait.
    assert api.seen[0].extensions["timeout"]["read"] < 60
