"""The outboxes of the channels clawbus delivers to itself: ``webchat`` (per recipient) and ``log`` (per
session). Read them as JSON pages, or follow them as server-sent events (resumable with Last-Event-ID)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import StreamingResponse

from clawbus.api import streams
from clawbus.api.auth import forbidden
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse
from clawbus.api.params import LastEventId, StreamId
from clawbus.shared.base.text import CONTROL_CLASS

router = APIRouter(prefix="/v1/channels", tags=["channels"])
LocalChannel = Literal["webchat", "log"]
Recipient = Annotated[str, Path(min_length=1, max_length=512, pattern=rf"^[^\s{CONTROL_CLASS}]+$")]
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 401)}
# How long one blocking read waits before a keep-alive comment goes out.
_BLOCK_MS = 15_000


@router.get("/{channel}/{to}/messages", responses=_errors)
def list_messages(
    channel: LocalChannel,
    to: Recipient,
    services: ServicesDep,
    principal: PrincipalDep,
    after: StreamId = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    _owner_only(principal.owner)
    entries = services.store.flows.read_outbox(channel, to, after or "-", limit)
    return {
        "messages": [{"id": entry_id, **fields} for entry_id, fields in entries],
        "last": entries[-1][0] if entries else after,
    }


@router.get("/{channel}/{to}/events", responses=_errors, response_class=StreamingResponse)
async def follow_messages(
    channel: LocalChannel,
    to: Recipient,
    request: Request,
    services: ServicesDep,
    principal: PrincipalDep,
    last_event_id: LastEventId = None,
    after: StreamId = None,
) -> StreamingResponse:
    _owner_only(principal.owner)

    async def events() -> AsyncIterator[str]:
        cursor = last_event_id or after or await services.live.outbox_end(channel, to)
        while not await request.is_disconnected():
            entries = await services.live.follow_outbox(channel, to, cursor, _BLOCK_MS)
            if not entries:
                yield streams.KEEPALIVE
                continue
            for entry_id, fields in entries:
                cursor = entry_id
                yield streams.sse(entry_id, "message", fields)

    return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-store"})


def _owner_only(owner: bool) -> None:
    """An outbox holds what any session delivered to that recipient: the operator's (or a bridge's) view."""
    if not owner:
        raise forbidden("reading a channel's outbox needs an owner token")
