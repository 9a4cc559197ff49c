"""shared/store/live.py's follows: a blocking stream read that Redis does not answer (a partition drops
packets without a word) fails within its block and the API's budget, not after the blocking client's own
long timeout and its retries."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import fakeredis
import pytest

from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.live import LiveStore

BLOCK_MS = 50
QUIET_S = 0.05


def _live(quiet_s: float | None) -> tuple[LiveStore, Any]:
    client = fakeredis.FakeAsyncRedis(decode_responses=True)
    return LiveStore.on(client, RedisKeys(), quiet_s=quiet_s), client


def test_a_follow_redis_does_not_answer_fails_within_its_block_and_the_budget() -> None:
    async def scenario() -> None:
        live, client = _live(QUIET_S)

        async def unanswered(*_: Any, **__: Any) -> None:
            await asyncio.sleep(3600)  # the read went into the partition

        client.xread = unanswered
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="did not answer a stream read"):
            await live.follow_run("r1", None, BLOCK_MS)
        assert time.monotonic() - started < BLOCK_MS / 1000 + QUIET_S + 1

    asyncio.run(scenario())


def test_a_follow_answered_within_its_block_returns_what_came() -> None:
    async def scenario() -> None:
        live, client = _live(QUIET_S)
        await client.xadd(RedisKeys().run_events("r1"), {"type": "started"})
        [(_, fields)] = await live.follow_run("r1", None, BLOCK_MS)
        assert fields == {"type": "started"}
        assert await live.follow_run("r1", "9999999999999-0", BLOCK_MS) == []

    asyncio.run(scenario())
