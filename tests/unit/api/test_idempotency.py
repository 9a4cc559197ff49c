"""api/idempotency.py: a request that creates work, repeated with its Idempotency-Key, makes nothing new and
answers with the same run; the key used for another request is a 422; a chat message's own id is its key."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

from clawbus.shared.store import Store
from clawbus.workers.testing import World

TARGET = "agent:main:cron:idem"
WAIT_S = 2


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


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def spawn_child(http: TestClient) -> str:
    args = {"task": "work slowly", "label": "worker"}
    answer = http.post("/tools/invoke", json={"tool": "sessions_spawn", "args": args, "sessionKey": "main"})
    child: str = answer.json()["result"]["details"]["childSessionKey"]
    return child


def test_a_kill_repeated_with_its_key_answers_what_the_first_killed(http: TestClient) -> None:
    child = spawn_child(http)
    path = f"/v1/sessions/main/subagents/{child}/kill"
    first = http.post(path, headers=keyed("kill-1"))
    again = http.post(path, headers=keyed("kill-1"))
    assert first.status_code == again.status_code == 200
    assert first.json()["killed"] == [child]
    assert again.json() == first.json()
    # Without its key, a repeat is a new kill, which finds nothing left to stop.
    assert http.post(path).json()["killed"] == []


def cancelled_twice(http: TestClient, path: str, key: str) -> tuple[Any, Any]:
    first = http.post(path, headers=keyed(key))
    again = http.post(path, headers=keyed(key))
    assert first.status_code == 200
    assert again.content == first.content
    return first.json(), again.json()


def test_a_run_cancel_repeated_with_its_key_answers_the_first_answer(http: TestClient) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    run_id = send(http, "cancel me", None).json()["result"]["details"]["runId"]
    first, _ = cancelled_twice(http, f"/v1/runs/{run_id}/cancel", "cancel-1")
    assert first["status"] == "aborted"


def test_a_flow_cancel_repeated_with_its_key_answers_the_first_answer(http: TestClient) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    flow_id = send(http, "a flow", None).json()["result"]["details"]["flowId"]
    first, _ = cancelled_twice(http, f"/v1/flows/{flow_id}/cancel", "flow-1")
    assert first["stopReason"] == "canceled"


def test_a_patch_repeated_with_its_key_answers_the_first_and_another_patch_under_it_is_422(
    http: TestClient,
) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    path = f"/v1/sessions/{TARGET}"
    first = http.patch(path, json={"label": "first"}, headers=keyed("patch-1"))
    http.patch(path, json={"label": "changed since"})
    again = http.patch(path, json={"label": "first"}, headers=keyed("patch-1"))
    assert again.json() == first.json()
    assert again.json()["label"] == "first"
    other = http.patch(path, json={"label": "other"}, headers=keyed("patch-1"))
    assert other.status_code == 422
    assert other.json()["error"]["field"] == "Idempotency-Key"


def test_a_refusal_is_not_kept_so_a_repeat_is_judged_again(http: TestClient) -> None:
    path = "/v1/runs/no-such-run/cancel"
    assert http.post(path, headers=keyed("missing-1")).status_code == 404
    assert http.post(path, headers=keyed("missing-1")).status_code == 404


def test_a_tool_call_repeated_with_its_key_answers_the_same_bytes(http: TestClient) -> None:
    http.put(f"/v1/sessions/{TARGET}")
    first = send(http, "same bytes", "bytes-1")
    again = send(http, "same bytes", "bytes-1")
    assert again.content == first.content


def test_keys_are_the_tokens_own(http: TestClient, api_store: Store) -> None:
    """The same key under another principal is another key: neither sees the other's answer."""
    http.put(f"/v1/sessions/{TARGET}")
    assert send(http, "mine", "shared-key").status_code == 200
    claimed = api_store.idempotency.claim("someone-else", "shared-key", "print", ttl_seconds=60, now_ms=1)
    assert claimed.answer is None  # a first use: not the 200 above, nor a 422 for another request
    assert claimed.seed.startswith("idempotency:someone-else:")


def test_a_waiting_send_repeated_before_its_answer_was_kept_reads_its_ended_run(
    http: TestClient, api_store: Store, api_world: World
) -> None:
    """The answer is kept after it is sent: a repeat that comes first runs beside it, on the first one's
    run, which may have ended already. It reads that run rather than wait until its deadline for an end
    it missed."""
    http.put(f"/v1/sessions/{TARGET}")
    headers = {"Idempotency-Key": "wait-key"}
    args = {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": WAIT_S}
    body = {"tool": "sessions_send", "args": args}
    first = http.post("/tools/invoke", json=body, headers=headers).json()["result"]["details"]
    assert first["status"] == "accepted"  # nothing ran it within its wait
    api_world.drain_runs()
    # As if the first's answer were not kept yet.
    assert api_store.redis.delete(*api_store.redis.keys(api_store.keys.idempotency_answer("*", "*"))) == 1

    started = time.monotonic()
    again = http.post("/tools/invoke", json=body, headers=headers).json()["result"]["details"]
    assert (again["runId"], again["status"], again["reply"]) == (first["runId"], "ok", "echo: hi")
    assert time.monotonic() - started < WAIT_S, "the repeat waited out its deadline"
