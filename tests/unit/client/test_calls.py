"""clients/python/clawbus_client/calls.py: which failures send a call that creates work again, and how a
send's answer is read."""

from __future__ import annotations

import httpx
import pytest
from clawbus_client import calls
from clawbus_client.errors import APIError
from clawbus_client.models import NotifyResult, SendResult, ToolFailure


def refused(status: int, retry_after: float | None = None) -> APIError:
    error = APIError(status, "unavailable", "try again")
    error.retry_after = retry_after
    return error


def test_a_lost_answer_is_sent_again_after_a_short_pause() -> None:
    pause = calls.retry_pause(1, httpx.ConnectError("refused"))
    assert pause is not None
    assert 0 < pause <= 0.1


def test_a_503_is_sent_again_no_sooner_than_its_retry_after() -> None:
    assert calls.retry_pause(1, refused(503, retry_after=1.5)) == 1.5


@pytest.mark.parametrize("status", [400, 404, 409, 422, 500])
def test_a_refusal_is_not_sent_again(status: int) -> None:
    assert calls.retry_pause(1, refused(status)) is None


def test_the_pauses_grow_to_at_most_two_seconds_and_stop_after_the_last_attempt() -> None:
    pauses = [calls.retry_pause(n, httpx.ReadTimeout("lost")) for n in range(1, calls.IDEMPOTENT_ATTEMPTS)]
    assert all(p is not None and p <= 2.0 for p in pauses)
    assert calls.retry_pause(calls.IDEMPOTENT_ATTEMPTS, httpx.ReadTimeout("lost")) is None


def test_only_the_tools_that_create_work_carry_a_key() -> None:
    assert calls.invoke("sessions_send", {}).creates_work
    assert not calls.invoke("sessions_history", {}).creates_work
    assert calls.invoke("sessions_history", {}, idempotency_key="mine").creates_work


def test_a_send_refused_before_any_run_is_a_tool_failure_and_one_failed_after_it_a_send_result() -> None:
    refusal = {"status": "error", "error": "no such session", "sessionKey": "x"}
    assert isinstance(calls.send_result(refusal), ToolFailure)
    failed = {"status": "error", "runId": "r", "sessionKey": "x", "error": "boom", "sentBeforeError": True}
    assert isinstance(calls.send_result(failed), SendResult)


def test_a_queued_notification_is_a_notify_result_and_a_refused_one_a_tool_failure() -> None:
    queued = {"status": "queued", "sessionKey": "x", "notificationId": "r", "durability": "durable"}
    assert isinstance(calls.send_result(queued), NotifyResult)
    missing = {"status": "error", "error": "Cannot notify, steer, or resume a missing session.", "runId": "r"}
    assert isinstance(calls.send_result(missing), ToolFailure)


@pytest.mark.parametrize(("mode", "waited"), [(None, 20), ("followup", 20), ("steer", 0), ("notify", 0)])
def test_only_a_turn_of_its_own_is_waited_for(mode: str | None, waited: float) -> None:
    sent = calls.sessions_send("x", "hi", timeout_seconds=20, mode=mode)
    assert sent.wait_seconds == waited
    assert sent.json["args"].get("mode") == mode


def test_a_path_segment_is_quoted_whole() -> None:
    assert calls.get_session("agent:main:a b/c").path == "/v1/sessions/agent:main:a%20b%2Fc"


def test_a_wait_the_server_cut_short_reads_as_no_run_yet() -> None:
    assert calls.wait_answer({"status": "timeout", "runId": "r"}) is None
