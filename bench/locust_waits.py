"""The locustfile of figure 14 (``bench/waits.py`` runs it): each simulated user makes one wait and keeps
its answer's timing. The first ``WAITS_GET`` users wait on a run of the list in ``WAITS_RUNS``
(``GET /v1/runs/{id}/wait``); the others make a waiting ``sessions_send`` to a session of their own
(``...:<WAITS_TAG>-send-<n>``, which ``bench/waits.py`` opened first: a send opens none). Every wait asks
for ``WAITS_TIMEOUT`` seconds. Locust quits once every user has its answer (its ``--run-time`` is only a
backstop), and the timings are written to ``WAITS_OUT`` (JSON) when it quits.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path
from typing import Any

import gevent  # type: ignore[import-untyped]
from locust import constant, events, task
from locust.contrib.fasthttp import FastHttpUser

RUNS = Path(os.environ["WAITS_RUNS"]).read_text().split()
GETS = int(os.environ["WAITS_GET"])
TIMEOUT_S = float(os.environ["WAITS_TIMEOUT"])
TOKEN = os.environ["WAITS_TOKEN"]
TAG = os.environ["WAITS_TAG"]
numbers = itertools.count()
timings: list[dict[str, Any]] = []


class Waiter(FastHttpUser):
    wait_time = constant(3600)  # one wait each: a user sleeps after it until locust stops
    network_timeout = TIMEOUT_S + 60
    connection_timeout = 60.0

    @task
    def one_wait(self) -> None:
        number = next(numbers)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        started = time.time()
        if number < GETS:
            run_id = RUNS[number]
            with self.client.get(
                f"/v1/runs/{run_id}/wait?timeout={TIMEOUT_S:g}",
                headers=headers,
                name="wait",
                catch_response=True,
            ) as response:
                status = (response.json() or {}).get("status") if response.status_code == 200 else None
        else:
            run_id = None
            body = {
                "tool": "sessions_send",
                "sessionKey": "main",
                "args": {
                    "sessionKey": f"agent:main:webchat:direct:{TAG}-send-{number}",
                    "message": "are you there?",
                    "timeoutSeconds": TIMEOUT_S,
                },
            }
            with self.client.post(
                "/tools/invoke", json=body, headers=headers, name="sessions_send", catch_response=True
            ) as response:
                answer = (response.json() or {}).get("result", {}) if response.status_code == 200 else {}
                result = answer.get("details", {})  # the tool's result, in the gateway's envelope
                status, run_id = result.get("status"), result.get("runId")
        timings.append(
            {
                "kind": "get" if number < GETS else "send",
                "runId": run_id,
                "started": started,
                "answered": time.time(),
                "http": response.status_code,
                "status": status,
            }
        )
        if len(timings) == self.environment.parsed_options.num_users:
            # Every wait answered: nothing is left to time. Quit from a greenlet of its own, as the runner
            # stops every user's, this one's included.
            gevent.spawn(self.environment.runner.quit)


@events.quitting.add_listener
def _write(environment: Any, **_kwargs: Any) -> None:
    Path(os.environ["WAITS_OUT"]).write_text(json.dumps(timings))
