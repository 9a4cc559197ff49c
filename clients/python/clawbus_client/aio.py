"""The asynchronous client: the same methods as ``Client``, awaited.

from clawbus_client import AsyncClient
async with AsyncClient() as bus:
    result = await bus.sessions_send("main", "hello", timeout_seconds=10)
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio
import httpx
from httpx_sse import aconnect_sse

from clawbus_client import calls
from clawbus_client.calls import HEADER, Call
from clawbus_client.errors import APIError, refusal
from clawbus_client.models import Run
from clawbus_client.settings import default_token, default_url

P = ParamSpec("P")
T = TypeVar("T")


def _sends(build: Callable[P, Call[T]]) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    """``build``'s request as a coroutine method: built, sent, read."""

    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    method.__name__, method.__doc__ = build.__name__, build.__doc__
    return method


class AsyncClient:
    """The HTTP API, for asyncio (and trio, through anyio). Arguments as ``Client``'s."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        token = token or default_token()
        self._http = httpx.AsyncClient(
            base_url=url or default_url(),
            headers={"Authorization": f"Bearer {token}"} if token else {},
            transport=transport,
            timeout=httpx.Timeout(30.0, connect=5.0),
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[T]) -> T:
        """As ``Client.send``: a call that creates work goes with an Idempotency-Key, again with it while
        its answer is lost."""
        if not call.creates_work:
            return call.read(await self._answer(call, {}))
        headers = {HEADER: call.key or str(uuid.uuid4())}
        attempt = 1
        while True:
            try:
                return call.read(await self._answer(call, headers))
            except (httpx.TransportError, APIError) as failure:
                pause = calls.retry_pause(attempt, failure)
                if pause is None:
                    raise
            await anyio.sleep(pause)
            attempt += 1

    async def _answer(self, call: Call[Any], headers: dict[str, str]) -> Any:
        response = await self._http.request(
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

    async def wait_run(self, run_id: str, timeout: float = 30) -> Run | None:
        """As ``Client.wait_run``."""
        deadline = anyio.current_time() + timeout
        while True:
            run = await self.send(calls.wait_once(run_id, max(deadline - anyio.current_time(), 0.0)))
            if run is not None or deadline - anyio.current_time() < calls.WAIT_AGAIN_MIN_S:
                return run

    def stream_run(self, run_id: str, after: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """As ``Client.stream_run``: ``async for event in bus.stream_run(run_id)``."""
        return self._stream(f"/v1/runs/{calls.segment(run_id)}/stream", after, until_ended=True)

    def stream_session(self, session_key: str, after: str | None = None) -> AsyncIterator[dict[str, Any]]:
        """As ``Client.stream_session``."""
        return self._stream(f"/v1/sessions/{calls.segment(session_key)}/stream", after, until_ended=False)

    async def _stream(
        self, path: str, after: str | None, *, until_ended: bool
    ) -> AsyncIterator[dict[str, Any]]:
        last = after
        for attempt in range(calls.STREAM_RECONNECTS + 1):
            headers = {"Last-Event-ID": last} if last else {}
            try:
                async with aconnect_sse(
                    self._http, "GET", path, headers=headers, timeout=calls.STREAM_TIMEOUT
                ) as source:
                    if source.response.status_code >= 400:
                        await source.response.aread()
                        raise refusal(source.response)
                    async for event in source.aiter_sse():
                        if not event.data:
                            continue
                        last = event.id or last
                        yield calls.stream_event(event.id, event.event, event.json())
                        if until_ended and event.event == "ended":
                            return
                    return
            except calls.STREAM_BROKEN:
                if attempt == calls.STREAM_RECONNECTS:
                    raise
                await anyio.sleep(calls.stream_pause(attempt))
