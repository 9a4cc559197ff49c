"""shared/intake/submit.py: what a finished wait returns (docs/contract.md §4). A wait held by an HTTP request
is capped at gateway.maxWaitSeconds and its timeout says so; an agent's parked wait is not capped and keeps
the plain text."""

from __future__ import annotations

from clawbus.shared.intake.submit import AwaitRun, send_outcome
from clawbus.shared.wire.models import RunStatus
from tests.support.runs import a_run

RUN = "5e1d0000-0000-4000-8000-000000000001"
KEY = "agent:main:target"


def a_wait(timeout_seconds: float, max_wait_seconds: float) -> AwaitRun:
    wait = send_outcome(RUN, KEY, timeout_seconds, max_wait_seconds, flow_id=RUN)
    assert isinstance(wait, AwaitRun)
    return wait


def test_a_wait_over_http_cut_short_by_the_cap_is_accepted_with_a_note_naming_the_cap() -> None:
    result = a_wait(900, 600).finish_over_http(None)
    assert result.wire() == {
        "runId": RUN,
        "status": "accepted",
        "sessionKey": KEY,
        "targetDisposition": "queued",
        "delivery": {"status": "pending", "mode": "announce"},
        "flowId": RUN,
        "note": (
            "waited 600s (gateway.maxWaitSeconds=600 caps a wait over HTTP; 900s were asked for); the run goes "
            f"on: wait again with GET /v1/runs/{RUN}/wait"
        ),
    }


def test_a_wait_within_the_cap_is_accepted_as_the_release_answers_a_wait_that_ran_out() -> None:
    for result in (a_wait(10, 600).finish_over_http(None), a_wait(600, 600).finish_over_http(None)):
        assert (result.status, result.note) == ("accepted", None)
    assert a_wait(2.5, 1).finish_over_http(a_run(RUN, RunStatus.RUNNING)).status == "accepted"


def test_an_agents_parked_wait_is_not_capped_and_has_no_note() -> None:
    # A run suspended on a send waits its whole timeoutSeconds: the HTTP cap is not its concern.
    assert a_wait(900, 600).finish(None).note is None


def test_a_wait_over_http_that_saw_the_end_returns_the_reply_as_before() -> None:
    result = a_wait(900, 600).finish_over_http(a_run(RUN, RunStatus.OK))
    assert result.wire() == {
        "runId": RUN,
        "status": "ok",
        "sessionKey": KEY,
        "delivery": {"status": "pending", "mode": "announce"},
        "reply": "done",
        "flowId": RUN,
    }
