"""A wait over HTTP lasts at most gateway.maxWaitSeconds, and its timeout says how long it waited and why,
not the longer time asked for (docs/contract.md §4 and §8): here against a slow run, running while the
request waits, and still ending ok after the request gave up."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from clawbus_client import Client
from clawbus_client.models import RunStatus
from fastapi.testclient import TestClient

from clawbus.api.routes import tools as tools_route
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import Enqueue, LaneHead
from clawbus.shared.flows import run_control
from clawbus.shared.store import Store
from clawbus.workers.testing import InlineDispatcher, World, drain_runs
from tests.conftest import make_config
from tests.support.api_app import TOKEN

MAX_WAIT = 1
# Long enough that every wait below ends before the run does, with room to spare on a busy machine.
DELAY_MS = 4000
SLOW = "agent:slow:main"
CAPPED = "(gateway.maxWaitSeconds=1 caps a wait over HTTP; 10s were asked for)"


class BackgroundWorker(InlineDispatcher):
    """Runs each dispatched run at once on its own thread, as a worker would while the API waits."""

    def __init__(self, world: World) -> None:
        super().__init__(world.store.redis)
        self.world = dataclasses.replace(world, dispatcher=self)  # the world's runs dispatched here
        self.threads: list[threading.Thread] = []
        self.dispatched: list[LaneHead] = []

    def render_run(self, head: LaneHead) -> Enqueue | None:
        return None  # so every run comes through dispatch_run, which starts its worker thread

    def dispatch_run(self, head: LaneHead, delay_s: float = 0.0) -> None:
        super().dispatch_run(head, delay_s)
        self.dispatched.append(head)
        thread = threading.Thread(target=drain_runs, args=(self.world,), daemon=True)
        self.threads.append(thread)
        thread.start()

    def join(self, deadline_s: float) -> None:
        for thread in self.threads:
            thread.join(max(deadline_s - time.monotonic(), 0))
            assert not thread.is_alive(), "a run did not end in time"


@pytest.fixture
def api_config() -> Config:
    return make_config(
        {
            "gateway": {"auth": {"tokens": [TOKEN]}, "maxWaitSeconds": MAX_WAIT},
            "agents": {"list": [{"id": "main", "default": True}, {"id": "slow", "model": "slowecho/echo"}]},
            "models": {"providers": {"slowecho": {"type": "echo", "delayMs": DELAY_MS}}},
        }
    )


@pytest.fixture
def recorded(api_world: World) -> Iterator[BackgroundWorker]:
    worker = BackgroundWorker(api_world)
    yield worker
    # The runs are not this test's concern any more: stopped, they end within a second, not DELAY_MS.
    for head in list(worker.dispatched):
        run_control.cancel_run(worker.world, head.run_id)
    worker.join(time.monotonic() + DELAY_MS / 1000 + 10)


def send(http: TestClient, timeout_seconds: float) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    response = http.post(
        "/tools/invoke",
        json={
            "tool": "sessions_send",
            "args": {"sessionKey": SLOW, "message": "hi", "timeoutSeconds": timeout_seconds},
        },
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]["details"]
    return result, time.monotonic() - started


def test_a_send_past_the_cap_is_answered_after_the_cap_and_says_so(
    http: TestClient, api_store: Store, recorded: BackgroundWorker
) -> None:
    result, took = send(http, 10)
    assert MAX_WAIT <= took < 10
    assert result["status"] == "accepted"
    assert result["note"] == (
        "waited 1s (gateway.maxWaitSeconds=1 caps a wait over HTTP; 10s were asked for); the run goes on: "
        f"wait again with GET /v1/runs/{result['runId']}/wait"
    )
    # The run was not touched by the end of the wait: it goes on and replies.
    recorded.join(time.monotonic() + DELAY_MS / 1000 + 10)
    run = api_store.runs.get(result["runId"])
    assert run is not None
    assert run.status == RunStatus.OK


def test_a_send_within_the_cap_is_accepted_as_the_release_answers_a_wait_that_ran_out(
    http: TestClient, recorded: BackgroundWorker
) -> None:
    result, _ = send(http, 1)
    assert (result["status"], result["targetDisposition"]) == ("accepted", "queued")
    assert "note" not in result


def test_a_message_posted_past_the_cap_says_so(http: TestClient, recorded: BackgroundWorker) -> None:
    response = http.post(f"/v1/sessions/{SLOW}/messages", json={"message": "hi", "timeoutSeconds": 10})
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["status"] == "accepted"
    assert result["note"].startswith("waited 1s (gateway.maxWaitSeconds=1 caps a wait over HTTP; 10s were")


def test_a_run_wait_past_the_cap_adds_an_error_with_the_seconds_waited_and_the_cap(
    http: TestClient, recorded: BackgroundWorker
) -> None:
    accepted, _ = send(http, 0)
    run_id = accepted["runId"]
    started = time.monotonic()
    waited = http.get(f"/v1/runs/{run_id}/wait", params={"timeout": 10})
    assert MAX_WAIT <= time.monotonic() - started < 10
    assert waited.json() == {
        "runId": run_id,
        "status": "timeout",
        "error": f"timed out after 1s {CAPPED}; the run continues: wait again with GET /v1/runs/{run_id}/wait",
    }


def test_a_run_wait_within_the_cap_answers_as_the_gateway_does(
    http: TestClient, recorded: BackgroundWorker
) -> None:
    accepted, _ = send(http, 0)
    waited = http.get(f"/v1/runs/{accepted['runId']}/wait", params={"timeout": 0.5})
    assert waited.json() == {"runId": accepted["runId"], "status": "timeout"}


def test_the_python_client_waits_again_until_its_own_timeout_is_spent(
    http: TestClient, recorded: BackgroundWorker
) -> None:
    accepted, _ = send(http, 0)

    def through_the_app(request: httpx.Request) -> httpx.Response:
        answer = http.request(request.method, request.url.path, params=dict(request.url.params))
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    client = Client("http://testserver", TOKEN, transport=httpx.MockTransport(through_the_app))
    started = time.monotonic()
    run = client.wait_run(accepted["runId"], timeout=10)
    assert run is not None
    assert run.status == RunStatus.OK  # seen past two capped waits of 1 s
    assert time.monotonic() - started >= DELAY_MS / 1000 - 1
    assert client.wait_run(send(http, 0)[0]["runId"], timeout=0.2) is None


def test_a_slow_accept_counts_against_the_sends_timeout(
    http: TestClient, recorded: BackgroundWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """timeoutSeconds counts from the request's arrival: an accept that took longer than it leaves no wait."""
    accept_s = 1.5
    threadpool = tools_route.run_in_threadpool

    async def slow_accept(func: Any, *args: Any) -> Any:
        await anyio.sleep(accept_s)
        return await threadpool(func, *args)

    monkeypatch.setattr(tools_route, "run_in_threadpool", slow_accept)
    result, took = send(http, 1)
    assert result["status"] == "accepted"
    # Answered when the accept ended (the deadline had passed), not a whole timeoutSeconds after it.
    assert accept_s <= took < accept_s + 0.9
