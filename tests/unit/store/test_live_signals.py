"""shared/store/live.py's ``RunSignals``: a pub/sub connection that goes quiet is probed, and one that does
not answer the probe is lost (a partition drops packets without a word)."""

from __future__ import annotations

import asyncio
from typing import Any

import fakeredis
import pytest

from clawbus.shared.ports.live import SignalsLost
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.live import RunSignals

QUIET_S = 0.01


async def _opened() -> tuple[RunSignals, Any]:
    pubsub = fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer(), decode_responses=True).pubsub()
    signals = RunSignals(pubsub, RedisKeys(), quiet_s=QUIET_S)
    await signals.open("home")
    await signals.receive()  # the home channel's confirmation
    return signals, pubsub


def test_a_quiet_connection_that_answers_its_probe_stays() -> None:
    async def scenario() -> None:
        signals, _ = await _opened()
        for _ in range(6):  # quiet, probed, answered: again and again
            assert await signals.receive() is None

    asyncio.run(scenario())


def test_a_quiet_connection_that_does_not_answer_its_probe_is_lost() -> None:
    async def scenario() -> None:
        signals, pubsub = await _opened()

        async def unanswered(*_: Any) -> None:
            """The PING went into the partition."""

        pubsub.ping = unanswered
        assert await signals.receive() is None  # quiet: probed
        with pytest.raises(SignalsLost, match="no answer to a PING"):
            await signals.receive()

    asyncio.run(scenario())
