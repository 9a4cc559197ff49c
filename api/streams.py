"""Server-sent event streams: one run's events, or every run of one session, as they happen.

An event is one entry of a run's event stream (``queued``, ``started``, ``text``, ``text_reset``,
``tool_call``, ``tool_result``, ``ended``): ``id:`` is its stream id (a run stream resumes right after the
``Last-Event-ID`` it is given), ``event:`` its type, ``data:`` the entry as JSON (text redacted as
everywhere). A comment goes out every 15 s of silence so proxies keep the connection; a run stream ends
after the run's ``ended`` event, and one opened after that replays from its cursor and ends. A stream that
loses Redis (its read unanswered for its block and ``gateway.redisTimeoutSeconds``' budget) ends with an
``error`` event saying so (``status`` 503, ``error``): its client follows again after its last event id.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import ParamSpec

from clawbus.api.errors import unavailable_message
from clawbus.shared.domain.redaction import scrub
from clawbus.shared.ports.live import Live
from clawbus.shared.ports.storage import StoreUnavailable

KEEPALIVE_MS = 15_000
# A lone comment line: no blank line after it, because a blank line ends an event, and some clients
# (httpx-sse) then hand out an empty event carrying the last id.
KEEPALIVE = ": keep-alive\n"

Disconnected = Callable[[], Awaitable[bool]]
P = ParamSpec("P")


def sse(event_id: str, event: str, data: dict[str, str]) -> str:
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def ending_when_redis_is_lost(
    stream: Callable[P, AsyncIterator[str]],
) -> Callable[P, AsyncIterator[str]]:
    """The stream, ended by an ``error`` event when Redis stops answering: its status line went out long
    ago, so the API's 503 can only be told in the stream, and a stream cut off without a word would look
    to its client like a network fault."""

    @functools.wraps(stream)
    async def ending(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[str]:
        try:
            async for chunk in stream(*args, **kwargs):
                yield chunk
        except StoreUnavailable as exc:
            yield f"event: error\ndata: {json.dumps({'status': 503, 'error': unavailable_message(exc)})}\n\n"

    return ending


def _shown(fields: dict[str, str]) -> dict[str, str]:
    return {name: (scrub(value) or "") if name == "text" else value for name, value in fields.items()}


@ending_when_redis_is_lost
async def run_events(
    live: Live, run_id: str, cursor: str | None, disconnected: Disconnected
) -> AsyncIterator[str]:
    """The run's events after ``cursor``, live, until its ``ended`` event or the client leaves."""
    block: int | None = None  # the first read answers at once: the run may have ended long ago
    while not await disconnected():
        entries = await live.follow_run(run_id, cursor, block)
        block = KEEPALIVE_MS
        for entry_id, fields in entries:
            cursor = entry_id
            yield sse(entry_id, fields.get("type", "event"), _shown(fields))
            if fields.get("type") == "ended":
                return
        if not entries:
            run = await live.read_run(run_id)
            if run is None or run.status.terminal:  # its end was before the cursor, or it is gone
                return
            yield KEEPALIVE


@ending_when_redis_is_lost
async def session_events(live: Live, session_key: str, disconnected: Disconnected) -> AsyncIterator[str]:
    """Every run of the session, those in its lane now and those accepted from now on, until the client
    leaves. Each event carries its ``runId``; its id is ``<runId>/<event id>``."""
    runs = await live.follow_session(session_key)
    block: int | None = None
    while not await disconnected():
        events = await runs.next(block)
        block = KEEPALIVE_MS
        if not events:
            yield KEEPALIVE
            continue
        for run_id, (entry_id, fields) in events:
            yield sse(
                f"{run_id}/{entry_id}", fields.get("type", "event"), {"runId": run_id, **_shown(fields)}
            )
