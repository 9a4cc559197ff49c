"""The synchronous client.

from clawbus_client import Client
with Client() as bus:                      # CLAWBUS_URL / CLAWBUS_TOKEN, or what `clawbus up` wrote
    result = bus.sessions_send("main", "hello", timeout_seconds=10)
    print(result.reply)
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import httpx
from httpx_sse import connect_sse

from clawbus_client import calls
from clawbus_client.calls import HEADER, Call
from clawbus_client.errors import APIError, refusal
from clawbus_client.models import Run
from clawbus_client.settings import default_token, default_url

P = ParamSpec("P")
T = TypeVar("T")


def _sends(build: Callable[P, Call[T]]) -> Callable[Concatenate[Client, P], T]:
    """``build``'s request as a method: built, sent, read."""

    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    method.__name__, method.__doc__ = build.__name__, build.__doc__
    return method


class Client:
    """The HTTP API, synchronously. ``url`` and ``token`` default to ``CLAWBUS_URL``/``CLAWBUS_TOKEN``, else
    what ``clawbus up`` wrote; ``transport``: an httpx transport (a test's, a proxy's)."""

    def __init__(
        self, url: str | None = None, token: str | None = None, transport: httpx.BaseTransport | None = None
    ) -> None:
        token = token or default_token()
        self._http = httpx.Client(
            base_url=url or default_url(),
            headers={"Authorization": f"Bearer {token}"} if token else {},
            transport=transport,
            timeout=httpx.Timeout(30.0, connect=5.0),
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[T]) -> T:
        """One request; one that creates work goes with an Idempotency-Key, again with it while its answer
        is lost (a dropped connection, a timeout, a 503): however many times it is sent, one run."""
        if not call.creates_work:
            return call.read(self._answer(call, {}))
        headers = {HEADER: call.key or str(uuid.uuid4())}
        attempt = 1
        while True:
            try:
                return call.read(self._answer(call, headers))
            except (httpx.TransportError, APIError) as failure:
                pause = calls.retry_pause(attempt, failure)
                if pause is None:
                    raise
            time.sleep(pause)
            attempt += 1

    def _answer(self, call: Call[Any], headers: dict[str, str]) -> Any:
        response = self._http.request(
            call.method,
            call.path,
            params=call.params,
            json=call.json,
            headers=headers,
            timeout=call.timeout(),
        )
        return calls.decoded(response)

    invoke = _sends(calls.invoke)
    sessions_list = _sends(calls.sessions_list)
    sessions_history = _sends(calls.sessions_history)
    sessions_send = _sends(calls.sessions_send)
    sessions_spawn = _sends(calls.sessions_spawn)
    tools = _sends(calls.tools)
    post_message = _sends(calls.post_message)
    list_all_sessions = _sends(calls.list_all_sessions)
    get_session = _sends(calls.get_session)
    open_session = _sends(calls.open_session)
    patch_session = _sends(calls.patch_session)
    session_status = _sends(calls.session_status)
    subagents = _sends(calls.subagents)
    subagent_info = _sends(calls.subagent_info)
    kill_subagent = _sends(calls.kill_subagent)
    steer_subagent = _sends(calls.steer_subagent)
    get_run = _sends(calls.get_run)
    run_events = _sends(calls.run_events)
    cancel_run = _sends(calls.cancel_run)
    get_flow = _sends(calls.get_flow)
    cancel_flow = _sends(calls.cancel_flow)
    channel_messages = _sends(calls.channel_messages)
    me = _sends(calls.me)
    status = _sends(calls.status)
    in_flight = _sends(calls.in_flight)
    budgets = _sends(calls.budgets)
    set_budget = _sends(calls.set_budget)
    ready = _sends(calls.ready)

    def wait_run(self, run_id: str, timeout: float = 30) -> Run | None:
        """The run once it ended; None if it was still going after ``timeout`` s. A server holds a wait at
        most ``gateway.maxWaitSeconds``: past that, this waits again until ``timeout`` is spent."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.send(calls.wait_once(run_id, max(deadline - time.monotonic(), 0.0)))
            if run is not None or deadline - time.monotonic() < calls.WAIT_AGAIN_MIN_S:
                return run

    def stream_run(self, run_id: str, after: str | None = None) -> Iterator[dict[str, Any]]:
        """The run's events as they happen (``{id, type, ...}``), until its ``ended`` event. A dropped
        connection is resumed by itself from the last event seen (``Last-Event-ID``): no gap, no repeat."""
        return self._stream(f"/v1/runs/{calls.segment(run_id)}/stream", after, until_ended=True)

    def stream_session(self, session_key: str, after: str | None = None) -> Iterator[dict[str, Any]]:
        """Every run of the session as it happens, those under way and those to come (each event names its
        ``runId``), for as long as the caller reads."""
        return self._stream(f"/v1/sessions/{calls.segment(session_key)}/stream", after, until_ended=False)

    def _stream(self, path: str, after: str | None, *, until_ended: bool) -> Iterator[dict[str, Any]]:
        last = after
        for attempt in range(calls.STREAM_RECONNECTS + 1):
            headers = {"Last-Event-ID": last} if last else {}
            try:
                with connect_sse(
                    self._http, "GET", path, headers=headers, timeout=calls.STREAM_TIMEOUT
                ) as source:
                    if source.response.status_code >= 400:
                        source.response.read()
                        raise refusal(source.response)
                    for event in source.iter_sse():
                        if not event.data:
                            continue  # a keep-alive some servers end with a blank line
                        last = event.id or last
                        yield calls.stream_event(event.id, event.event, event.json())
                        if until_ended and event.event == "ended":
                            return
                    return  # closed without an end: the run is gone
            except calls.STREAM_BROKEN:
                if attempt == calls.STREAM_RECONNECTS:
                    raise
                time.sleep(calls.stream_pause(attempt))
