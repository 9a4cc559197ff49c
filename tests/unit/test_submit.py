"""shared/submit.py: what a finished wait returns (docs/contract.md §4). A wait held by an HTTP request is
capped at gateway.maxWaitSeconds and its timeout says so; an agent's parked wait is not capped and keeps
the plain text."""

from __future__ import annotations

from shared.models import RunStatus
from shared.submit import AwaitRun, send_outcome
from shared.tools.send_schema import timed_out
from tests.support.runs import a_run

RUN = "5e1d0000-0000-4000-8000-000000000001"
KEY = "agent:main:target"
CONTINUES = f"the run continues: read sessions_history later or wait again with GET /v1/runs/{RUN}/wait"


def a_wait(timeout_seconds: float, max_wait_seconds: float) -> AwaitRun:
    wait = send_outcome(RUN, KEY, timeout_seconds, max_wait_seconds, flow_id=RUN)
    assert isinstance(wait, AwaitRun)
    return wait


def test_a_wait_over_http_cut_short_by_the_cap_names_the_cap_and_what_was_asked() -> None:
    result = a_wait(900, 600).finish_over_http(None)
    assert result.wire() == {
        "runId": RUN,
        "status": "timeout",
        "sessionKey": KEY,
        "flowId": RUN,
        "error": (
            "timed out after 600s (gateway.maxWaitSeconds=600 caps a wait over HTTP; 900s were asked for); "
            + CONTINUES
        ),
    }


def test_a_wait_over_http_within_the_cap_says_only_how_long_it_waited() -> None:
    assert a_wait(10, 600).finish_over_http(None).error == f"timed out after 10s; {CONTINUES}"
    assert a_wait(600, 600).finish_over_http(None).error == f"timed out after 600s; {CONTINUES}"


def test_a_wait_over_http_on_a_run_still_going_is_a_timeout_too() -> None:
    result = a_wait(2.5, 1).finish_over_http(a_run(RUN, RunStatus.RUNNING))
    assert result.error == (
        f"timed out after 1s (gateway.maxWaitSeconds=1 caps a wait over HTTP; 2.5s were asked for); {CONTINUES}"
    )


def test_an_agents_parked_wait_is_not_capped_and_keeps_the_plain_text() -> None:
    # A run suspended on a send waits its whole timeoutSeconds: the HTTP cap is not its concern.
    assert a_wait(900, 600).finish(None).error == f"timed out after 900s; {CONTINUES}"


def test_a_wait_over_http_that_saw_the_end_returns_the_reply_as_before() -> None:
    result = a_wait(900, 600).finish_over_http(a_run(RUN, RunStatus.OK))
    assert result.wire() == {
        "runId": RUN,
        "status": "ok",
        "reply": "done",
        "sessionKey": KEY,
        "delivery": {"status": "pending", "mode": "announce"},
        "flowId": RUN,
    }


def test_the_timeout_text_names_the_cap_only_when_it_cut_the_wait_short() -> None:
    assert timed_out(30) == "timed out after 30s"
    assert timed_out(0.5, 1) == "timed out after 0.5s"
    assert timed_out(1, 1) == "timed out after 1s"
    assert (
        timed_out(10, 2)
        == "timed out after 2s (gateway.maxWaitSeconds=2 caps a wait over HTTP; 10s were asked for)"
    )
