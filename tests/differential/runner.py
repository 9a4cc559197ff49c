"""Runs a scenario on one side: each call over HTTP, its references resolved from that side's earlier
answers, its ``Until`` polled and each ``Settle`` waited for, all with deadlines."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.differential import sse
from tests.differential.answer import Answer
from tests.differential.calls import TOKEN, Call, Ref, Settle, Step, lookup, payload_of
from tests.differential.normalize import normalize
from tests.support.fake_openai import FakeOpenAI

POLL_SECONDS = 0.25
# A side is at rest once its model has had no request in flight and none new for this long: the gap
# between two steps of one exchange (the reply step after the primary run) is well under it.
QUIET_SECONDS = 1.5
ANNOUNCE_MARKER = "Agent-to-agent announce step"


@dataclass(frozen=True)
class Side:
    """One system under comparison: where it answers, and the fake model only it talks to."""

    name: str
    url: str
    model: FakeOpenAI
    # Folders of this side's state (path -> placeholder), masked in its answers.
    roots: Mapping[str, str] = field(default_factory=dict)


class Unresolved(Exception):
    """A ``Ref`` names an answer this side did not give (the call failed, or answered another shape)."""


class Abandoned(Exception):
    """The run was given up (the other side failed, or the test was interrupted)."""


class Runner:
    def __init__(self, side: Side, abandoned: threading.Event) -> None:
        self.side = side
        self.abandoned = abandoned
        self.answers: dict[str, Answer] = {}
        # The model's request count when each call was sent, for Settle.
        self._model_mark: dict[str, tuple[int, int]] = {}

    def run(self, steps: list[Step]) -> dict[str, Answer]:
        # A connection a call: the gateway (Node) closes a keep-alive connection idle for 5 s, and a call
        # sent on it as it closes is reset (seen once on a loaded machine, after a long settle).
        fresh = httpx.Limits(max_keepalive_connections=0)
        with httpx.Client(base_url=self.side.url, limits=fresh) as http:
            for step in steps:
                if self.abandoned.is_set():
                    raise Abandoned(self.side.name)
                if isinstance(step, Settle):
                    self._settle(step)
                else:
                    self.answers[step.name] = self._call(http, step)
        return self.answers

    def _call(self, http: httpx.Client, call: Call) -> Answer:
        self._model_mark[call.name] = self._model_counts()
        started = time.monotonic()
        answer = self._answer(http, call)
        answer.seconds = time.monotonic() - started
        return answer

    def _answer(self, http: httpx.Client, call: Call) -> Answer:
        try:
            request = self._request(call)
        except Unresolved as exc:
            return Answer(0, note=f"unresolved reference {exc}")
        answer = self._send(http, call, request)
        if call.until is None:
            return answer
        deadline = time.monotonic() + call.until.deadline
        while not _holds(call.until.holds, answer):
            if time.monotonic() > deadline:
                answer.note = f"not within {call.until.deadline:.0f} s: {call.until.describe}"
                return answer
            if self.abandoned.wait(POLL_SECONDS):
                return answer
            answer = self._send(http, call, request)
        return answer

    def _request(self, call: Call) -> dict[str, Any]:
        headers = dict(call.headers)
        if call.auth == "token":
            headers["authorization"] = f"Bearer {TOKEN}"
        elif call.auth == "bad":
            headers["authorization"] = "Bearer not-the-token"
        content: bytes | None = None
        if call.raw is not None:
            content = call.raw.encode()
        elif call.body is not None:
            content = json.dumps(self._resolved(call.body)).encode()
        if content is not None:
            headers["content-type"] = "application/json"
        return {"method": call.method, "url": call.path, "headers": headers, "content": content}

    def _resolved(self, value: Any) -> Any:
        if isinstance(value, Ref):
            answer = self.answers.get(value.call)
            try:
                if answer is None:
                    raise KeyError(value.call)
                return lookup(payload_of(answer.body), value.path)
            except KeyError:
                raise Unresolved(f"{value.call}.{value.path}") from None
        if isinstance(value, dict):
            return {k: self._resolved(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._resolved(v) for v in value]
        return value

    def _send(self, http: httpx.Client, call: Call, request: dict[str, Any]) -> Answer:
        try:
            response = http.request(**request, timeout=call.timeout)
        except httpx.HTTPError as exc:
            return Answer(0, note=f"{type(exc).__name__}: {exc}")
        media_type = response.headers.get("content-type", "").split(";")[0].strip()
        body = _body(response.text, media_type)
        return Answer(response.status_code, media_type, body, normalize(body, self.side.roots))

    def _model_counts(self) -> tuple[int, int]:
        requests = list(self.side.model.requests)
        return len(requests), sum(_is_announce(body) for body in requests)

    def _settle(self, settle: Settle) -> None:
        """Waits as the step says; a side that never gets there is noted on the call it waited after."""
        calls, announces = self._model_mark.get(settle.since, (0, 0))
        # A call that was refused started nothing: waiting for its model traffic would only run out the clock.
        expected = settle if _accepted(self.answers.get(settle.since)) else Settle(settle.since)
        model = self.side.model
        deadline = time.monotonic() + settle.deadline
        while True:
            now_calls, now_announces = self._model_counts()
            started = (
                now_calls - calls >= expected.model_calls
                and now_announces - announces >= expected.announce_steps
            )
            idle = model.in_flight == 0 and (
                not model.arrived or time.monotonic() - model.arrived[-1] >= QUIET_SECONDS
            )
            if started and idle:
                return
            if time.monotonic() > deadline:
                answer = self.answers.get(settle.since)
                if answer is not None:
                    seen = f"{now_calls - calls} model calls, {now_announces - announces} announce steps"
                    answer.note = answer.note or f"did not settle within {settle.deadline:.0f} s ({seen})"
                return
            if self.abandoned.wait(POLL_SECONDS):
                return


def _body(text: str, media_type: str) -> Any:
    if media_type == "text/event-stream":
        return {"events": sse.parse(text)}
    try:
        return json.loads(text)
    except ValueError:
        return text


def _accepted(answer: Answer | None) -> bool:
    """The call was taken: a 200 whose payload is no refusal (``status: "error"`` or ``"forbidden"``)."""
    if answer is None or answer.status != 200 or answer.note:
        return False
    payload = payload_of(answer.body)
    return not (isinstance(payload, dict) and payload.get("status") in ("error", "forbidden"))


def _holds(condition: Callable[[Any], bool], answer: Answer) -> bool:
    return answer.status != 0 and condition(payload_of(answer.body))


def _is_announce(body: dict[str, Any]) -> bool:
    return any(
        isinstance(m, dict)
        and m.get("role") in ("system", "developer")
        and ANNOUNCE_MARKER in str(m.get("content"))
        for m in body.get("messages") or []
    )
