"""Load through a Redis outage, and what became of it: the Redis high-availability tests and the failover
benchmark both drive a real fleet with this.

``Load`` posts fire-and-forget sends from one thread per API process; ``waiting_sends`` holds sends that
wait for their answers; ``settle`` follows every run the clients were told was accepted to its end and
reads its session's transcript, so a lost or duplicated run shows.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from shared.processes import wait_for

# A call refused while Redis is away answers this; anything else but 200 is a failure.
REFUSED = 503


@dataclass(frozen=True)
class Accepted:
    run_id: str
    session_key: str
    message: str
    at: float  # time.time() when the API answered


@dataclass
class Load:
    """Fire-and-forget ``sessions_send`` calls over ``sessions`` cron sessions of ``agent``, one thread
    per API process, each sending one every ``interval_s`` (a steady load the fleet keeps up with: what an
    outage does to it shows, not a backlog of the load's own making), until ``stop``."""

    urls: list[str]
    token: str
    agent: str = "main"
    sessions: int = 20
    interval_s: float = 0.05
    accepted: list[Accepted] = field(default_factory=list)
    refused: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> Load:
        tag = uuid.uuid4().hex[:6]
        for index, url in enumerate(self.urls):
            thread = threading.Thread(target=self._post, args=(url, f"{tag}-{index}"), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def _post(self, url: str, tag: str) -> None:
        with httpx.Client(base_url=url, headers=_auth(self.token), timeout=10) as client:
            n = 0
            while not self._stop.is_set():
                key = f"agent:{self.agent}:cron:ha-{n % self.sessions}"
                message = f"{tag}-{n}"
                n += 1
                args = {"sessionKey": key, "message": message, "timeoutSeconds": 0}
                outcome = _invoke(client, args)
                with self._lock:
                    if isinstance(outcome, dict):
                        self.accepted.append(Accepted(outcome["runId"], key, message, time.time()))
                    elif outcome == REFUSED:
                        self.refused += 1
                    else:
                        self.failures.append(f"{url}: {outcome}")
                time.sleep(self.interval_s)


@dataclass(frozen=True)
class WaitOutcome:
    answered: int
    refused: int
    failures: list[str]


def waiting_sends(urls: list[str], token: str, agent: str, count: int, timeout_s: float) -> WaitOutcome:
    """``count`` sends that wait for their answers at once (to sessions of their own), spread over the API
    processes; each must be answered with its own reply, or refused before it was accepted."""

    def one(i: int) -> Any:
        with httpx.Client(
            base_url=urls[i % len(urls)], headers=_auth(token), timeout=timeout_s + 30
        ) as client:
            message = f"wait-{i}-{uuid.uuid4().hex[:6]}"
            args = {
                "sessionKey": f"agent:{agent}:cron:wait-{i}",
                "message": message,
                "timeoutSeconds": timeout_s,
            }
            outcome = _invoke(client, args)
            if isinstance(outcome, dict) and (outcome.get("status"), outcome.get("reply")) != (
                "ok",
                f"echo: {message}",
            ):
                return f"send {i} answered {outcome}"
            return outcome

    with ThreadPoolExecutor(count) as pool:
        outcomes = list(pool.map(one, range(count)))
    return WaitOutcome(
        answered=sum(isinstance(o, dict) for o in outcomes),
        refused=sum(o == REFUSED for o in outcomes),
        failures=[str(o) for o in outcomes if not isinstance(o, dict) and o != REFUSED],
    )


@dataclass(frozen=True)
class Settled:
    ended_at: dict[str, int]  # run id -> when it ended (ms)
    not_ok: dict[str, str]  # run id -> its status, for runs that did not end ok
    lost: list[str]  # accepted, but gone or not ended by the deadline
    duplicated: list[str]  # a run whose reply is in its transcript more than once


def settle(url: str, token: str, accepted: list[Accepted], timeout_s: float) -> Settled:
    """Follow every accepted run to its end (until ``timeout_s``), then count each run's replies in its
    session's transcript."""
    pending = {a.run_id for a in accepted}
    ended: dict[str, dict[str, Any]] = {}
    with httpx.Client(base_url=url, headers=_auth(token), timeout=10) as client:

        def all_ended() -> bool:
            for run_id in list(pending):
                response = client.get(f"/v1/runs/{run_id}")
                if response.status_code == 200 and response.json()["status"] in TERMINAL:
                    ended[run_id] = response.json()
                    pending.discard(run_id)
            return not pending

        with contextlib.suppress(TimeoutError):
            wait_for(all_ended, timeout_s, interval=0.5, what="every accepted run to end")
        replies: Counter[str] = Counter()
        for key in {a.session_key for a in accepted}:
            history = client.post(
                "/tools/invoke",
                json={"tool": "sessions_history", "args": {"sessionKey": key, "limit": 1000}},
            ).json()["result"]
            replies.update(m["runId"] for m in history["messages"] if m["role"] == "assistant")
    return Settled(
        ended_at={run_id: run["endedAt"] for run_id, run in ended.items()},
        not_ok={run_id: run["status"] for run_id, run in ended.items() if run["status"] != "ok"},
        lost=sorted(pending),
        duplicated=sorted(run_id for run_id in ended if replies[run_id] > 1),
    )


TERMINAL = {"ok", "error", "timeout", "aborted"}


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _invoke(client: httpx.Client, args: dict[str, Any]) -> dict[str, Any] | int | str:
    """The send's result, or the HTTP status it was refused with, or what went wrong."""
    try:
        response = client.post("/tools/invoke", json={"tool": "sessions_send", "args": args})
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {exc}"
    if response.status_code != 200:
        return response.status_code if response.status_code == REFUSED else f"HTTP {response.status_code}"
    result: dict[str, Any] = response.json()["result"]
    return result
