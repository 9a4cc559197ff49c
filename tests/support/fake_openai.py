"""A fake OpenAI-compatible chat completions server: FastAPI on a loopback port, answering from a script.

Each model has its own queue of answers, so two agents on two models can be driven independently. An
answer is a ``Reply`` or a function of the request body returning one (to answer with what a tool
returned). The server streams (SSE, text and tool-call arguments split over several chunks) when asked
to, records every request body, and times its own work so a benchmark can subtract it.

Like a provider's account, it can enforce rate limits (``ProviderLimits``, off unless given): per API key
(the Authorization header), a 60-second sliding window of the requests it answered and of their tokens (the
usage each answer reports); a request beyond either gets a 429 with ``Retry-After`` and OpenAI's
``x-ratelimit-*`` headers, which every answer then carries.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

# Characters of text per streamed chunk.
CHUNK_CHARS = 4


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    usage: tuple[int, int] = (100, 20)
    status: int = 200
    error: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    # Streaming only: a pause before every chunk (a slow model), or the whole stream's time spread over
    # its chunks (tool calls and the usage chunk included), and a connection dropped after this many
    # chunks (a failure mid-answer).
    chunk_delay: float = 0.0
    stream_seconds: float = 0.0
    cut_after: int | None = None
    # Streaming only: the stream goes silent after this many chunks, its connection open, until the
    # server's ``release()`` (a model stalled mid-answer).
    hold_after: int | None = None
    # An error answer's ``type`` and ``code`` in its body.
    error_type: str = "invalid_request_error"
    error_code: str | None = None


Answer = Reply | Callable[[dict[str, Any]], Reply]


def text(value: str, usage: tuple[int, int] = (100, 20)) -> Reply:
    return Reply(text=value, usage=usage)


def paced(value: str, seconds: float, usage: tuple[int, int] = (100, 20)) -> Reply:
    """A text streamed over ``seconds`` (when the request asks for a stream), as a slow model does."""
    return Reply(text=value, usage=usage, stream_seconds=seconds)


def tool(name: str, usage: tuple[int, int] = (100, 20), **args: Any) -> Reply:
    return Reply(tool_calls=[(name, args)], usage=usage)


def failure(status: int, message: str, **headers: str) -> Reply:
    """An error answer; a header's name with a hyphen goes through a dict:
    ``failure(429, "slow down", **{"Retry-After": "2"})``."""
    return Reply(status=status, error=message, headers=headers)


# The span of a provider's rate window.
WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class ProviderLimits:
    """What the fake provider allows one API key in any 60 s (None: not limited). A request's tokens are
    the usage its answer reports (prompt + completion)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    # Whether answers state the limits (``x-ratelimit-*``), as OpenAI's do; many compatible servers only
    # answer a 429 with its ``Retry-After``.
    states_limits: bool = True


def openai_duration(seconds: float) -> str:
    """A span as OpenAI's ``x-ratelimit-reset-*`` headers write it: ``20ms``, ``1s``, ``1.5s``, ``6m0s``."""
    ms = max(math.ceil(seconds * 1000), 0)
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest = divmod(ms, 60_000)
    return f"{minutes}m{rest / 1000:g}s" if minutes else f"{rest / 1000:g}s"


@dataclass
class _Window:
    """One API key's answered requests of the last 60 s: (when, tokens), oldest first."""

    entries: deque[tuple[float, int]] = field(default_factory=deque)

    def trim(self, now: float) -> None:
        while self.entries and self.entries[0][0] <= now - WINDOW_SECONDS:
            self.entries.popleft()

    @property
    def tokens(self) -> int:
        return sum(tokens for _, tokens in self.entries)

    def frees_in(self, now: float, index: int) -> float:
        """Seconds until the entry at ``index`` (and every one before it) has left the window."""
        return max(self.entries[index][0] + WINDOW_SECONDS - now, 0.0) if self.entries else 0.0


@dataclass(frozen=True)
class _Refusal:
    kind: str  # "requests" or "tokens"
    retry_after: float
    limit: int
    used: int
    requested: int


# ``plan: steps=N seconds=S``: the run's first message asks ``planned`` for N steps of about S seconds.
PLAN = re.compile(r"^plan: steps=(\d+) seconds=([\d.]+)")


def run_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages of the run asking: those after the session's last final answer."""
    messages: list[dict[str, Any]] = body["messages"]
    finals = [i for i, m in enumerate(messages) if m["role"] == "assistant" and not m.get("tool_calls")]
    return messages[finals[-1] + 1 :] if finals else messages


def user_texts(body: dict[str, Any]) -> list[str]:
    """The user messages of the run asking, in order: its input, then any steered into it."""
    return [m["content"] for m in run_messages(body) if m["role"] == "user"]


def planned(body: dict[str, Any]) -> Reply:
    """A model that follows the plan its run's first message states: N steps of about S seconds (tool
    calls, then a final answer ``heard: `` and the run's user messages, in order); no plan, one quick
    step. What a run took in while it ran (steered messages) shows in its reply."""
    said = user_texts(body)
    plan = PLAN.match(said[0]) if said else None
    steps, seconds = (int(plan[1]), float(plan[2])) if plan else (1, 0.2)
    done = sum(m["role"] == "tool" for m in run_messages(body))
    if done + 1 < steps:
        reply = paced("working on it, one careful step at a time. ", seconds)
        reply.tool_calls = [("sessions_list", {})]
        return reply
    return paced("heard: " + " | ".join(said), seconds)


# The model of the OpenClaw reference kit (its fake_openai.py), one answer for every request, so that the
# real gateway and clawbus, driven by the same calls (tests/differential), see the same model.
REFERENCE_REPLY = "FAKE-REPLY: hello from fake model"
REFERENCE_USAGE = (10, 5)
# A run whose input holds this is answered slowly, so that it is still going when the next calls look.
SLOW_MARKER = "[slow]"
SLOW_SECONDS = 6.0


def reference_reply(body: dict[str, Any]) -> Reply:
    """The reference answer: ``REPLY_SKIP`` or ``ANNOUNCE_SKIP`` when the system text marks an
    agent-to-agent reply or announce step (OpenClaw's and clawbus's contexts use the same phrases), so a
    send is one turn on both; else ``REFERENCE_REPLY``, streamed over SLOW_SECONDS when the run's input
    holds SLOW_MARKER."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = " ".join(_plain(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    if "Agent-to-agent reply step" in system:
        return text("REPLY_SKIP", usage=REFERENCE_USAGE)
    if "Agent-to-agent announce step" in system:
        return text("ANNOUNCE_SKIP", usage=REFERENCE_USAGE)
    # The run's own input: what came after the last answer (OpenClaw adds a context message after it).
    answered = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    run_input = messages[answered[-1] + 1 :] if answered else messages
    if any(SLOW_MARKER in _plain(m.get("content")) for m in run_input if m.get("role") == "user"):
        return paced(REFERENCE_REPLY, SLOW_SECONDS, usage=REFERENCE_USAGE)
    return text(REFERENCE_REPLY, usage=REFERENCE_USAGE)


def _plain(content: Any) -> str:
    """A message's text, whether a string or a list of parts (OpenClaw sends parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def last_tool_result(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON a tool returned, as the model sees it in its last ``tool`` message."""
    message = next(m for m in reversed(body["messages"]) if m["role"] == "tool")
    result: dict[str, Any] = json.loads(message["content"])
    return result


@dataclass
class FakeOpenAI:
    url: str  # the base URL a provider is configured with (ends in /v1)
    queues: dict[str, deque[Answer]] = field(default_factory=lambda: defaultdict(deque))
    requests: list[dict[str, Any]] = field(default_factory=list)
    # When (monotonic) each request arrived, in the order of ``requests``.
    arrived: list[float] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    # The client's (host, port) of each request: one port twice is one kept-alive connection reused.
    peers: list[tuple[str, int]] = field(default_factory=list)
    # Seconds the server spent building each answer (from request parsed to last byte produced).
    server_seconds: list[float] = field(default_factory=list)
    default: Answer = field(default_factory=lambda: text("ok"))
    # Streams being sent right now, and the most there ever were at once.
    in_flight: int = 0
    max_in_flight: int = 0
    # When (monotonic) a client closed a stream before its end: a cancelled run hangs up on its model.
    hung_up: list[float] = field(default_factory=list)
    # The model's own time to first token: seconds from a streamed request's arrival to its first chunk.
    first_chunk_seconds: list[float] = field(default_factory=list)
    # The provider's rate limits (None: none), per API key; see ``limit``.
    limits: ProviderLimits | None = None
    # Requests answered 2xx and refused with a 429 (a limit's, a scripted one or a forced one), and when
    # (monotonic, on arrival) each was.
    answered: int = 0
    rate_limited: int = 0
    answered_at: list[float] = field(default_factory=list)
    rate_limited_at: list[float] = field(default_factory=list)
    _windows: dict[str, _Window] = field(default_factory=lambda: defaultdict(_Window))
    # Unexpected 429s still to answer, whatever the limits, and the Retry-After they carry.
    _forced: int = 0
    _forced_after: str = "1"
    _count_lock: threading.Lock = field(default_factory=threading.Lock)
    # Set by ``release``: the streams held (``Reply.hold_after``) go on, and no later one holds.
    released: threading.Event = field(default_factory=threading.Event)
    # Streams silent in a hold right now.
    holding: int = 0

    def release(self) -> None:
        self.released.set()

    def streaming(self, change: int) -> None:
        with self._count_lock:
            self.in_flight += change
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def script(self, model: str, *answers: Answer) -> None:
        self.queues[model].extend(answers)

    def bodies(self, model: str) -> list[dict[str, Any]]:
        return [body for body in self.requests if body["model"] == model]

    def limit(self, limits: ProviderLimits | None) -> None:
        """Enforce ``limits`` from now on (None: none); what the windows hold already still counts."""
        self.limits = limits

    def rate_limit_next(self, count: int, retry_after: float | str = 1) -> None:
        """The next ``count`` requests get a 429 with ``Retry-After: retry_after``, whatever the limits (a
        provider's unexpected refusal); no scripted answer is used up by them."""
        self._forced = count
        self._forced_after = f"{retry_after:g}" if isinstance(retry_after, float | int) else retry_after

    def most_in_window(self, seconds: float = WINDOW_SECONDS) -> int:
        """The most answered requests that ever arrived within ``seconds`` of each other (all keys)."""
        times = sorted(self.answered_at)
        most, first = 0, 0
        for last, at in enumerate(times):
            while at - times[first] >= seconds:
                first += 1
            most = max(most, last - first + 1)
        return most

    def _next(self, body: dict[str, Any]) -> Reply:
        queue = self.queues[body["model"]]
        answer = queue.popleft() if queue else self.default
        return answer(body) if callable(answer) else answer

    def _peek(self, body: dict[str, Any]) -> tuple[Reply, bool]:
        """The answer ``body`` would get, and whether it comes off the model's queue (``_next`` takes it)."""
        queue = self.queues[body["model"]]
        answer = queue[0] if queue else self.default
        return (answer(body) if callable(answer) else answer), bool(queue)

    def _refusal(self, key: str, tokens: int, now: float) -> _Refusal | None:
        """Why a request of ``tokens`` by ``key`` is beyond the limits now, if it is."""
        limits, window = self.limits, self._windows[key]
        if limits is None:
            return None
        window.trim(now)
        rpm = limits.requests_per_minute
        if rpm is not None and len(window.entries) >= rpm:
            # The entry whose leaving brings the window below the limit.
            wait = window.frees_in(now, len(window.entries) - rpm)
            return _Refusal("requests", wait, rpm, len(window.entries), 1)
        tpm = limits.tokens_per_minute
        used = window.tokens
        if tpm is not None and used + tokens > tpm:
            wait, freed = WINDOW_SECONDS, 0
            if tokens <= tpm:
                for index, (_, spent) in enumerate(window.entries):
                    freed += spent
                    if used - freed + tokens <= tpm:
                        wait = window.frees_in(now, index)
                        break
            return _Refusal("tokens", wait, tpm, used, tokens)
        return None

    def _limit_headers(self, key: str, now: float) -> dict[str, str]:
        """OpenAI's ``x-ratelimit-*`` headers of ``key``'s window now (none without limits). A reset is the
        time until the oldest request in the window leaves it: when the next place frees."""
        limits, window = self.limits, self._windows[key]
        if limits is None or not limits.states_limits:
            return {}
        window.trim(now)
        reset = openai_duration(window.frees_in(now, 0))
        headers: dict[str, str] = {}
        if limits.requests_per_minute is not None:
            headers["x-ratelimit-limit-requests"] = str(limits.requests_per_minute)
            left = limits.requests_per_minute - len(window.entries)
            headers["x-ratelimit-remaining-requests"] = str(max(left, 0))
            headers["x-ratelimit-reset-requests"] = reset
        if limits.tokens_per_minute is not None:
            headers["x-ratelimit-limit-tokens"] = str(limits.tokens_per_minute)
            headers["x-ratelimit-remaining-tokens"] = str(max(limits.tokens_per_minute - window.tokens, 0))
            headers["x-ratelimit-reset-tokens"] = reset
        return headers

    def _answer(self, body: dict[str, Any], key: str, now: float) -> tuple[Reply, dict[str, str]]:
        """The reply to a request arriving ``now`` (a 429 if it is beyond the limits, or one is forced),
        with the rate-limit headers it carries; counted. Called under the server's lock."""
        if self._forced > 0:
            self._forced -= 1
            reply = _rate_limit_reply(
                "Rate limit reached (the fake provider refuses this request)", "requests", self._forced_after
            )
            self.rate_limited += 1
            self.rate_limited_at.append(now)
            return reply, self._limit_headers(key, now)
        reply, queued = self._peek(body)
        refusal = self._refusal(key, sum(reply.usage), now) if reply.status < 400 else None
        if refusal is not None:
            self.rate_limited += 1
            self.rate_limited_at.append(now)
            per = "requests per min (RPM)" if refusal.kind == "requests" else "tokens per min (TPM)"
            message = (
                f"Rate limit reached for {body.get('model')} on {per}: Limit {refusal.limit}, "
                f"Used {refusal.used}, Requested {refusal.requested}. "
                f"Please try again in {openai_duration(refusal.retry_after)}."
            )
            after = str(max(math.ceil(refusal.retry_after), 1))
            return _rate_limit_reply(message, refusal.kind, after), self._limit_headers(key, now)
        if queued:
            self.queues[body["model"]].popleft()
        if reply.status < 400:
            self.answered += 1
            self.answered_at.append(now)
            if self.limits is not None:
                self._windows[key].entries.append((now, sum(reply.usage)))
        elif reply.status == 429:
            self.rate_limited += 1
            self.rate_limited_at.append(now)
        return reply, self._limit_headers(key, now)


def _rate_limit_reply(message: str, kind: str, retry_after: str) -> Reply:
    reply = Reply(status=429, error=message, headers={"Retry-After": retry_after})
    reply.error_type, reply.error_code = kind, "rate_limit_exceeded"
    return reply


def _app(state: FakeOpenAI) -> FastAPI:
    app = FastAPI()
    lock = threading.Lock()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Response:
        started = time.perf_counter()
        body = await request.json()
        key = request.headers.get("authorization", "")
        with lock:
            now = time.monotonic()
            state.requests.append(body)
            state.arrived.append(now)
            state.headers.append(dict(request.headers))
            state.peers.append((request.client.host, request.client.port) if request.client else ("", 0))
            reply, limit_headers = state._answer(body, key, now)
        if reply.status >= 400:
            state.server_seconds.append(time.perf_counter() - started)
            error: dict[str, Any] = {"message": reply.error, "type": reply.error_type}
            if reply.error_code is not None:
                error["code"] = reply.error_code
            return JSONResponse(
                {"error": error}, status_code=reply.status, headers={**limit_headers, **reply.headers}
            )
        headers = {**limit_headers, **reply.headers}
        if body.get("stream"):
            chunks = list(_chunks(body["model"], reply))
            state.server_seconds.append(time.perf_counter() - started)
            return StreamingResponse(
                _paced(state, chunks, reply, started), media_type="text/event-stream", headers=headers
            )
        payload = _whole(body["model"], reply)
        state.server_seconds.append(time.perf_counter() - started)
        return JSONResponse(payload, headers=headers)

    return app


async def _paced(state: FakeOpenAI, chunks: list[str], reply: Reply, started: float) -> AsyncIterator[str]:
    """Asynchronous, so a slow stream holds no thread: hundreds stream at once, as from a real provider."""
    state.streaming(+1)
    ended = False
    delay = reply.chunk_delay or reply.stream_seconds / len(chunks)
    try:
        for sent, chunk in enumerate(chunks):
            if reply.cut_after is not None and sent == reply.cut_after:
                ended = True  # the server's own drop, not the client's
                raise ConnectionAbortedError("the fake model dropped the connection")
            if reply.hold_after is not None and sent == reply.hold_after:
                await _held(state)
            if delay:
                await asyncio.sleep(delay)
            if sent == 0:
                state.first_chunk_seconds.append(time.perf_counter() - started)
            yield chunk
        ended = True
    finally:
        state.streaming(-1)
        if not ended:
            state.hung_up.append(time.monotonic())


async def _held(state: FakeOpenAI) -> None:
    """Silent, the connection open, until the test releases the model (polled: the event is a thread's)."""
    with state._count_lock:
        state.holding += 1
    try:
        while not state.released.is_set():
            await asyncio.sleep(0.05)
    finally:
        with state._count_lock:
            state.holding -= 1


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{i}_{name}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (name, args) in enumerate(reply.tool_calls)
    ]


def _usage(reply: Reply) -> dict[str, int]:
    prompt, completion = reply.usage
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _whole(model: str, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = _calls(reply)
    finish = "tool_calls" if reply.tool_calls else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _usage(reply),
    }


def _chunks(model: str, reply: Reply) -> Iterator[str]:
    def chunk(delta: dict[str, Any], usage: dict[str, int] | None = None) -> str:
        choices = [{"index": 0, "delta": delta}] if delta else []
        payload: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": choices,
        }
        if usage is not None:
            payload["usage"] = usage
        return f"data: {json.dumps(payload)}\n\n"

    pieces = [reply.text[i : i + CHUNK_CHARS] for i in range(0, len(reply.text), CHUNK_CHARS)]
    for piece in pieces:
        yield chunk({"content": piece})
    for index, call in enumerate(_calls(reply)):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        first = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {
                "tool_calls": [
                    {**first, "function": {"name": call["function"]["name"], "arguments": arguments[:half]}}
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
    yield chunk({}, _usage(reply))
    yield "data: [DONE]\n\n"


@contextmanager
def fake_openai(default: Answer | None = None, limits: ProviderLimits | None = None) -> Iterator[FakeOpenAI]:
    """The server; ``default`` answers whatever no script queued (``reference_reply``: the reference kit's
    model), else ``text("ok")``; ``limits``: the rate limits it enforces (none unless given)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    state = FakeOpenAI(f"http://127.0.0.1:{port}/v1", limits=limits)
    if default is not None:
        state.default = default
    server = uvicorn.Server(uvicorn.Config(_app(state), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the fake OpenAI server did not start")
        time.sleep(0.01)
    try:
        yield state
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
