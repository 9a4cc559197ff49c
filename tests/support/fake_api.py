"""A fake clawbus API for the thin client's unit tests: an httpx transport whose answers a test scripts, recording what it
was sent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

Answer = Callable[[httpx.Request], httpx.Response]


@dataclass
class FakeApi:
    """Answers the n-th request with ``answers[n]`` (the last one again past the end)."""

    answers: list[Answer] = field(default_factory=list)
    seen: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        return self.answers[min(len(self.seen), len(self.answers)) - 1](request)

    def keys(self) -> list[str | None]:
        return [request.headers.get("idempotency-key") for request in self.seen]


def lost(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadError("connection reset with the answer in flight", request=request)


def unavailable(_request: httpx.Request) -> httpx.Response:
    return httpx.Response(503, json={"error": {"type": "unavailable", "message": "restarting"}})


def accepted(_request: httpx.Request) -> httpx.Response:
    details = {"status": "accepted", "runId": "run-1", "sessionKey": "agent:main:x"}
    return httpx.Response(200, json={"ok": True, "result": {"content": [], "details": details}})


def steered(_request: httpx.Request) -> httpx.Response:
    """A ``mode: "steer"`` send, accepted into the target's running run."""
    details = {
        "status": "accepted",
        "runId": "run-1",
        "sessionKey": "agent:main:x",
        "targetDisposition": "steered",
        "delivery": {"status": "skipped", "mode": "announce"},
    }
    return httpx.Response(200, json={"ok": True, "result": {"content": [], "details": details}})


def notified(_request: httpx.Request) -> httpx.Response:
    """A ``mode: "notify"`` send: queued as context for the target's next turn."""
    details = {
        "status": "queued",
        "sessionKey": "agent:main:x",
        "notificationId": "run-2",
        "durability": "durable",
        "runStarted": False,
    }
    return httpx.Response(200, json={"ok": True, "result": {"content": [], "details": details}})
