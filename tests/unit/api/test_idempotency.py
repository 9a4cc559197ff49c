"""api/idempotency.py: a request that creates work, repeated with its Idempotency-Key, makes nothing new and
answers with the same run; the key used for another request is a 422; a chat message's own id is its key."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from shared.store import Store

TARGET = "agent:main:cron:idem"


def send(http: TestClient, message: str, key: str | None) -> Any:
    headers = {"Idempotency-Key": key} if key else {}
    args = {"sessionKey": TARGET, "message": message, "timeoutSeconds": 0}
    return http.post("/tools/invoke", json={"tool": "sessions_send", "args": args}, headers=headers)


def runs_in(store: Store, session_key: str) -> list[str]:
    return store.runs.lane(session_key)


def test_a_send_repeated_with_its_key_answers_the_same_run_and_makes_no_other(
    http: TestClient, api_store: Store
) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    first = send(http, "once", "key-1").json()["result"]["details"]
    again = send(http, "once", "key-1").json()["result"]["details"]
    assert first["runId"] == again["runId"]
    assert runs_in(api_store, TARGET) == [first["runId"]]


def test_without_a_key_every_send_is_its_own(http: TestClient, api_store: Store) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    first = send(http, "twice", None).json()["result"]["details"]
    second = send(http, "twice", None).json()["result"]["details"]
    assert first["runId"] != second["runId"]


def test_a_key_used_for_another_request_is_422_naming_it(http: TestClient) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    assert send(http, "one thing", "key-2").status_code == 200
    answer = send(http, "another thing", "key-2")
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error["field"] == "Idempotency-Key"
    assert "key-2" in error["message"]


def test_a_key_too_long_is_400(http: TestClient) -> None:
    answer = send(http, "x", "k" * 300)
    assert answer.status_code == 400
    assert answer.json()["error"]["field"] == "Idempotency-Key"


def test_a_chat_message_redelivered_with_its_message_id_makes_one_run(
    http: TestClient, api_store: Store
) -> None:
    body = {
        "message": "hello",
        "timeoutSeconds": 0,
        "channel": "telegram",
        "to": "42",
        "messageId": "update-7",
    }
    runs = {http.post(f"/v1/sessions/{TARGET}/messages", json=body).json()["runId"] for _ in range(5)}
    assert len(runs) == 1
    assert runs_in(api_store, TARGET) == list(runs)


def test_a_chat_message_repeated_with_its_key_makes_one_run(http: TestClient, api_store: Store) -> None:
    body = {"message": "hello", "timeoutSeconds": 0}
    headers = {"Idempotency-Key": "message-key"}
    runs = {
        http.post(f"/v1/sessions/{TARGET}/messages", json=body, headers=headers).json()["runId"]
        for _ in range(3)
    }
    assert len(runs) == 1
