"""api/streams.py: a stream that loses Redis mid-way ends with an ``error`` event saying so (its 200 went
out long ago), not with its connection cut."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from clawbus.api import streams
from clawbus.shared.ports.storage import StoreUnavailable


class LosingLive:
    """A live store whose first follow answers one event and whose second finds Redis gone."""

    def __init__(self) -> None:
        self.follows = 0

    async def follow_run(self, run_id: str, cursor: str | None, block_ms: int | None) -> list[Any]:
        self.follows += 1
        if self.follows == 1:
            return [("1-0", {"type": "started"})]
        raise StoreUnavailable("Redis did not answer a stream read within 17.0 s")


async def _connected() -> bool:
    return False


def test_a_run_stream_that_loses_redis_ends_with_an_error_event() -> None:
    async def scenario() -> list[str]:
        live: Any = LosingLive()
        return [chunk async for chunk in streams.run_events(live, "r1", None, _connected)]

    started, ending = asyncio.run(scenario())
    assert started.startswith("id: 1-0\nevent: started\n")
    head, data = ending.rstrip("\n").split("\n")
    assert head == "event: error"
    assert json.loads(data.removeprefix("data: ")) == {
        "status": 503,
        "error": "the store is unavailable; retry shortly",
    }
