"""The runtime for any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server,
LM Studio, OpenRouter): one ``POST /chat/completions`` per model step.

The session's transcript tail is the conversation, the run's agent-to-agent context is system text, and the
agent's tools go as function schemas. A 429, a 5xx or a dropped connection is retried with backoff
(``Retry-After`` when the server gives one); any other 4xx ends the run with the server's own message.
Under a gate (``StepRequest.gate``) each request is admitted first, and a 429 is no failure: it sets the
cooldown every worker obeys, and the request waits for its turn again.
Streamed text lands in the run's event stream as it arrives; a retry after some of it says so there. A
step that outlives the run's time limit is cut off, between two streamed chunks at the latest.
"""

from __future__ import annotations

import json
import random
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext, suppress
from typing import Any

import httpx
import orjson

from clawbus.shared.base.backoff import delay
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import OpenAIModel, OpenAIProvider
from clawbus.shared.domain import chains
from clawbus.shared.ports.runtime import CancelSignal, RunCancelled, RunTimedOut, StepRequest, StepResult
from clawbus.shared.wire.models import Message, Sampling, ToolCallBlock, Usage

MAX_BACKOFF_SECONDS = 30.0
# The headers every request carries; the provider's own and its key go beside them.
BASE_HEADERS = {"content-type": "application/json", "accept": "*/*", "user-agent": "clawbus"}


def retryable(status: int) -> bool:
    """Rate limits and server errors pass; any other 4xx is the request's fault and would fail again."""
    return status == 429 or status >= 500


class ModelRequestFailed(ClawbusError, RuntimeError):
    """The endpoint refused the request (a 4xx other than 429), or kept failing past the retries."""


class OpenAIRuntime:
    # The transcript tail a step sends: enough for a conversation, bounded so a long session's request
    # stays within the model's context.
    history_window = 100
    repeatable = False

    def __init__(
        self,
        provider: OpenAIProvider,
        model: OpenAIModel,
        transport: httpx.BaseTransport,
        sleep: Callable[[float], None] = time.sleep,
        stream_idle_seconds: float | None = None,
    ) -> None:
        self._provider = provider
        self._model = model
        # Requests are built whole here (body, headers, timeouts) and go straight to the connection pool.
        self._transport = transport
        self._url = httpx.URL(provider.base_url.rstrip("/") + "/chat/completions")
        self._headers = {**BASE_HEADERS, **provider.headers}
        self._sleep = sleep
        self._stream_idle = stream_idle_seconds

    def step(self, request: StepRequest) -> StepResult:
        body = self.body(request)
        gate = request.gate
        cap = gate.output_cap() if gate is not None else None
        if cap is not None:
            # The bound its budget reservation assumed: a requester's cap may be lower, never higher.
            body["max_tokens"] = min(body.get("max_tokens", cap), cap)
        deadline = None if request.time_limit is None else time.monotonic() + request.time_limit
        failures = 0
        while True:
            timeout = self._provider.timeout_seconds
            if deadline is not None:
                timeout = min(timeout, deadline - time.monotonic())
                if timeout <= 0:
                    raise RunTimedOut("the model did not answer in time")
            ticket = gate.admit(body) if gate is not None else None
            headers: dict[str, str] = {}
            try:
                result = self._attempt(body, request, timeout, deadline, headers)
            except _Retryable as exc:
                if exc.streamed and request.on_restart is not None:
                    request.on_restart()
                if gate is not None and ticket is not None and exc.rate_limited:
                    # The fleet's cooldown paces the retry; a rate limit fails no run while it may wait.
                    gate.rate_limited(ticket, exc.headers, delay(failures + 1, 0.5, MAX_BACKOFF_SECONDS))
                    continue
                if gate is not None and ticket is not None:
                    gate.settle(ticket, None, exc.headers)
                failures += 1
                if failures > self._provider.max_retries:
                    raise ModelRequestFailed(f"{exc} (gave up after {failures} attempts)") from None
                pause = (
                    exc.retry_after
                    if exc.retry_after is not None
                    else delay(failures, 0.5, MAX_BACKOFF_SECONDS)
                )
                if deadline is not None and time.monotonic() + pause >= deadline:
                    raise RunTimedOut(f"{exc}; no time left to retry") from None
                if request.cancel is None:
                    self._sleep(pause)
                elif request.cancel.wait(pause):  # a cancel ends the pause, and the step
                    raise RunCancelled() from None
                continue
            except BaseException:
                if gate is not None and ticket is not None:
                    gate.settle(ticket, None, headers)
                raise
            if gate is not None and ticket is not None:
                gate.settle(ticket, result.usage, headers)
            return result

    def body(self, request: StepRequest) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._model.id, "messages": chat_messages(request)}
        if request.tool_schemas:
            body["tools"] = request.tool_schemas
        if self._model.max_tokens is not None:
            body["max_tokens"] = self._model.max_tokens
        if request.sampling is not None:
            _ask_as_sampled(body, request.sampling)
        if self._model.reasoning and request.thinking and request.thinking != "off":
            body["reasoning_effort"] = request.thinking
        if self._provider.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _attempt(
        self,
        body: dict[str, Any],
        request: StepRequest,
        timeout: float,
        deadline: float | None,
        headers: dict[str, str],
    ) -> StepResult:
        """One request; ``headers`` gets the response's (the gate learns from them)."""
        sent = self._headers
        key = self._provider.api_key()
        if key:
            sent = {**sent, "authorization": f"Bearer {key}"}
        if request.chain is not None:  # a clawbus serving this model goes on counting the chain's hops
            sent = {**sent, chains.HEADER: chains.header(request.chain)}
        timeouts = self._timeouts(body, timeout)
        outgoing = httpx.Request(
            "POST", self._url, content=orjson.dumps(body), headers=sent, extensions={"timeout": timeouts}
        )
        streamed: list[str] = []

        def on_text(text: str) -> None:
            streamed.append(text)
            if request.on_text is not None:
                request.on_text(text)

        try:
            response = self._transport.handle_request(outgoing)
            try:
                with _hanging_up(request, response):
                    headers.update((name.lower(), value) for name, value in response.headers.items())
                    if response.status_code >= 400:
                        response.read()
                        _raise_for(response)
                    if body.get("stream"):
                        payloads = _until_cancelled(sse_data(response.iter_bytes()), request, streamed)
                        return self._result(*_collect_stream(payloads, on_text, deadline))
                    whole = response.read()
                    if request.cancelled():
                        raise RunCancelled()
                    return self._result(*_parse_whole(_json_of(whole), on_text))
            finally:
                response.close()
        except httpx.TransportError as exc:
            if request.cancelled():  # the cancel hung up on the model
                raise RunCancelled("".join(streamed)) from None
            if isinstance(exc, httpx.TimeoutException):
                raise _Retryable(
                    f"model request timed out ({type(exc).__name__})", streamed=bool(streamed)
                ) from None
            raise _Retryable(
                f"model endpoint unreachable ({type(exc).__name__}: {exc})", streamed=bool(streamed)
            ) from None

    def _timeouts(self, body: dict[str, Any], timeout: float) -> dict[str, float]:
        """``timeout`` for every wait; a stream's reads (the gaps between its bytes) also within
        ``models.streamIdleTimeoutSeconds``: a stream that stalls with its connection open fails then."""
        read = timeout
        if body.get("stream") and self._stream_idle is not None:
            read = min(timeout, self._stream_idle)
        return {"connect": timeout, "read": read, "write": timeout, "pool": timeout}

    def _result(
        self, text: str, calls: list[ToolCallBlock], usage: dict[str, Any], response_id: str | None
    ) -> StepResult:
        # An endpoint that reports no usage leaves the counts unknown, not zero.
        prompt = _tokens(usage.get("prompt_tokens"))
        completion = _tokens(usage.get("completion_tokens"))
        cost = self._model.cost_usd(prompt, completion)
        return StepResult(
            reply=text,
            tool_calls=calls,
            usage=Usage(input_tokens=prompt, output_tokens=completion, cost_usd=cost),
            response_id=response_id,
        )


def _ask_as_sampled(body: dict[str, Any], sampling: Sampling) -> None:
    """The requester's sampling (its fields are named as chat completions names them), and its token cap
    within the model's configured one (``maxTokens``, the operator's bound)."""
    asked = sampling.model_dump(exclude_none=True)
    cap = asked.pop("max_tokens", None)
    if cap is not None:
        body["max_tokens"] = min(cap, body.get("max_tokens", cap))
    body.update(asked)


def _tokens(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class _Retryable(ClawbusError):
    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        streamed: bool = False,
        rate_limited: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        # Some text of the failed attempt already went out to the run's events.
        self.streamed = streamed
        # A 429, or a 503 that says when to come back: the provider's rate limit, not a failure.
        self.rate_limited = rate_limited
        self.headers = headers or {}


def _raise_for(response: httpx.Response) -> None:
    detail = _error_text(response)
    message = f"model request failed: HTTP {response.status_code}: {detail}"
    if retryable(response.status_code):
        after = _retry_after(response)
        limited = response.status_code == 429 or (response.status_code == 503 and after is not None)
        headers = {name.lower(): value for name, value in response.headers.items()}
        raise _Retryable(message, after, rate_limited=limited, headers=headers)
    raise ModelRequestFailed(message)


def _error_text(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:500]
    if isinstance(error, str):
        return error[:500]
    return json.dumps(payload)[:500]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return min(max(float(value), 0.0), MAX_BACKOFF_SECONDS) if value is not None else None
    except ValueError:  # an HTTP date: rare from model APIs, the computed backoff does as well
        return None


def chat_messages(request: StepRequest) -> list[dict[str, Any]]:
    """The transcript as chat messages. A tail cut mid-exchange would leave tool results without their
    call (or calls without results), which the API rejects: those halves are left out."""
    system = f'You are the agent "{request.agent_id}".'
    if request.session is not None:
        system += f" Your session is {request.session.key}."
    if request.context:
        system += "\n\n" + request.context
    called = {call.id for m in request.messages for call in m.tool_calls}
    answered = {m.tool_call_id for m in request.messages if m.role in ("toolResult", "tool")}
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in request.messages:
        if message.role in ("toolResult", "tool"):
            if message.tool_call_id in called:
                out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text})
        elif message.role == "assistant":
            out.append(_assistant(message, answered))
        elif message.role == "system":
            out.append({"role": "system", "content": message.text})
        else:
            out.append({"role": "user", "content": message.text})
    return out


def _assistant(message: Message, answered: set[str | None]) -> dict[str, Any]:
    calls = [call for call in message.tool_calls if call.id in answered]
    entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if calls:
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in calls
        ]
    elif entry["content"] is None:
        entry["content"] = ""
    return entry


def _parse_whole(
    payload: dict[str, Any], on_text: Callable[[str], None] | None
) -> tuple[str, list[ToolCallBlock], dict[str, Any], str | None]:
    try:
        message = payload["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelRequestFailed(f"model answered without a choice: {json.dumps(payload)[:300]}") from None
    text = message.get("content") or ""
    if text and on_text is not None:
        on_text(text)
    calls = [
        _call(raw.get("id"), raw.get("function", {}).get("name"), raw.get("function", {}).get("arguments"))
        for raw in message.get("tool_calls") or []
    ]
    return text, calls, payload.get("usage") or {}, _response_id(payload)


def _hanging_up(request: StepRequest, response: httpx.Response) -> AbstractContextManager[None]:
    """While the response is read, a cancel shuts its socket down: a read blocked on a model that says
    nothing yet returns at once (closing the socket from another thread would not wake it)."""
    if not isinstance(request.cancel, CancelSignal):
        return nullcontext()

    def hang_up() -> None:
        stream = response.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    return request.cancel.on_set(hang_up)


def _until_cancelled(payloads: Iterator[bytes], request: StepRequest, streamed: list[str]) -> Iterator[bytes]:
    """The stream's events until the run is cancelled: then ``RunCancelled`` with the text so far, and
    closing the response closes the connection, which tells the model to stop."""
    for payload in payloads:
        if request.cancelled():
            raise RunCancelled("".join(streamed))
        yield payload


def sse_data(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The payload of each ``data:`` line of a server-sent event stream, as the bytes arrive (a line may
    span chunks; a newline byte is never part of a UTF-8 character, so lines split safely as bytes)."""
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                yield line[5:].strip()
    if rest.startswith(b"data:"):
        yield rest[5:].strip()


def _collect_stream(
    payloads: Iterator[bytes], on_text: Callable[[str], None] | None, deadline: float | None = None
) -> tuple[str, list[ToolCallBlock], dict[str, Any], str | None]:
    """Server-sent chunks: text deltas (passed on as they come), tool call fragments by index, usage.
    Past ``deadline`` (monotonic) the step is cut off: a model that keeps talking does not outlive the
    run's time limit (a silent one is cut by the read timeout)."""
    text: list[str] = []
    parts: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    response_id: str | None = None
    for data in payloads:
        if deadline is not None and time.monotonic() > deadline:
            raise RunTimedOut("the model was still answering when the time limit ran out")
        if data == b"[DONE]":
            # Read to the body's end (nothing follows the marker): a response left half-read closes its
            # connection, and the next step would pay a new one (as the OpenAI SDK, which drains too).
            for _rest in payloads:
                pass
            break
        chunk = _json_of(data)
        if chunk.get("error"):
            raise ModelRequestFailed(f"model stream failed: {json.dumps(chunk['error'])[:300]}")
        usage = chunk.get("usage") or usage
        response_id = response_id or _response_id(chunk)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
                if on_text is not None:
                    on_text(delta["content"])
            for fragment in delta.get("tool_calls") or []:
                part = parts.setdefault(fragment.get("index", 0), {"id": None, "name": "", "arguments": ""})
                part["id"] = fragment.get("id") or part["id"]
                function = fragment.get("function") or {}
                part["name"] += function.get("name") or ""
                part["arguments"] += function.get("arguments") or ""
    calls = [_call(part["id"], part["name"], part["arguments"]) for _, part in sorted(parts.items())]
    return "".join(text), calls, usage, response_id


def _json_of(data: bytes) -> dict[str, Any]:
    """A JSON object the endpoint sent; anything else is a failed request, named."""
    try:
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise ModelRequestFailed(f"model answered what is not JSON: {data[:300]!r}") from None
    if not isinstance(parsed, dict):
        raise ModelRequestFailed(f"model answered what is not a JSON object: {data[:300]!r}")
    return parsed


def _response_id(payload: dict[str, Any]) -> str | None:
    """The provider's id of its answer (``chatcmpl-...``), kept on the assistant message as the release
    keeps it (``responseId``)."""
    found = payload.get("id")
    return found if isinstance(found, str) and found else None


def _call(call_id: str | None, name: str | None, arguments: str | None) -> ToolCallBlock:
    """Arguments that are not a JSON object are passed as none: the tool's validation then names what is
    missing, which the model can act on."""
    try:
        parsed = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        parsed = {}
    return ToolCallBlock(
        id=call_id or f"call_{random.getrandbits(64):016x}",
        name=name or "",
        arguments=parsed if isinstance(parsed, dict) else {},
    )
