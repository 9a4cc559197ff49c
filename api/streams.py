"""Server-sent event streams: one run's events, or every run of one session, as they happen.

An event is one entry of a run's event stream (``queued``, ``started``, ``text``, ``text_reset``,
``tool_call``, ``tool_result``, ``ended``): ``id:`` is its stream id (a run stream resumes right after the
``Last-Event-ID`` it is given), ``event:`` its type, ``data:`` the entry as JSON (text redacted as
everywhere). A comment goes out every 15 s of silence so proxies keep the connection; a run stream ends
after the run's ``ended`` event, and one opened after that replays from its cursor and ends.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable

from shared.domain.redaction import scrub
from shared.ports.live import Live

KEEPALIVE_MS = 15_000
# A lone comment line: no blank line after it, because a blank line ends an event, and some clients
# (httpx-sse) then hand out an empty event carrying the last id.
KEEPALIVE = ": keep-alive\n"

Disconnected = Callable[[], Awaitable[bool]]


def sse(event_id: str, event: str, data: dict[str, str]) -> str:
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _shown(fields: dict[str, str]) -> dict[str, str]:
    return {name: (scrub(value) or "") if name == "text" else value for name, value in fields.items()}


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
