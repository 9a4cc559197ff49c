"""SIGTERM, as an orchestrator sends it before a restart: a worker finishes the run it has, and the API
answers its open waits at once with a retryable 503 instead of holding them. Nothing is lost."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import httpx
from clawbus_client import Client
from clawbus_client.models import RunStatus, SendResult

from tests.support.processes import Role, wait_for
from tests.support.stack import TOKEN, Fresh

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


def exited(role: Role, timeout: float) -> int:
    assert role.process is not None
    return role.process.wait(timeout)


def active_waits(url: str) -> float:
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("clawbus_active_waits "):
            return float(line.split()[1])
    return -1.0


def test_sigterm_on_a_worker_lets_its_current_run_finish(fresh: Fresh) -> None:
    fresh.start_redis()
    worker = fresh.worker(concurrency=1)
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        accepted = client.post_message("agent:slow:cron:drain", "take your time", timeout_seconds=0)
        assert isinstance(accepted, SendResult)
        wait_for(lambda: client.get_run(accepted.run_id).status == RunStatus.RUNNING, 20, what="the 3 s run")
        assert worker.process is not None
        worker.process.send_signal(signal.SIGTERM)
        assert exited(worker, 30) == 0
        run = client.get_run(accepted.run_id)
    # Finished by the worker that had it, before it left: one attempt, and an answer.
    assert (run.status, run.attempts, run.reply) == (RunStatus.OK, 1, "echo: take your time")
    assert "Warm shutdown" in worker.output()


def test_sigterm_on_the_api_ends_its_waits_with_a_retryable_503_and_the_run_goes_on(fresh: Fresh) -> None:
    fresh.start_redis()  # no worker yet: the run waits in its queue, the caller waits on the API
    api, url = fresh.api()
    answer: dict[str, Any] = {}

    def waiting_call() -> None:
        body = {"message": "are you there?", "timeoutSeconds": 120}
        response = httpx.post(
            f"{url}/v1/sessions/agent:main:cron:stop/messages", json=body, headers=HEADERS, timeout=150
        )
        answer.update(status=response.status_code, headers=response.headers, body=response.json())

    caller = threading.Thread(target=waiting_call)
    caller.start()
    wait_for(lambda: active_waits(url) == 1, 20, what="the wait to be open")
    assert api.process is not None
    stopped = time.monotonic()
    api.process.send_signal(signal.SIGTERM)
    caller.join(30)
    assert time.monotonic() - stopped < 15  # not the 120 s the caller asked for
    assert answer["status"] == 503
    assert answer["headers"]["retry-after"] == "1"
    error = answer["body"]["error"]
    assert error["type"] == "unavailable"
    run_id = error["runId"]
    assert f"GET /v1/runs/{run_id}/wait" in error["message"]
    # A clean stop: uvicorn shuts the app down, then re-raises the signal it caught (exit by SIGTERM).
    assert exited(api, 30) in (0, -signal.SIGTERM)
    assert "Application shutdown complete." in api.output()

    fresh.worker()
    _, elsewhere = fresh.api()
    with Client(elsewhere, TOKEN) as client:
        run = client.wait_run(run_id, 30)
    assert run is not None
    assert (run.status, run.reply) == (RunStatus.OK, "echo: are you there?")
