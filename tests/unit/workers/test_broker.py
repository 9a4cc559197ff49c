"""workers/broker.py: one publishing client per channel, and a channel closed after its connection."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

from clawbus.workers import broker


class _Channel(broker._OnePublisher):
    def __init__(self, client: Any) -> None:
        self.connection = SimpleNamespace(client=client)
        self.pool = object()
        self.made = 0

    def _create_client(self) -> Any:
        self.made += 1
        return SimpleNamespace(connection_pool=self.pool)


def test_every_publish_of_a_channel_shares_one_client_until_the_pool_changes() -> None:
    channel = _Channel(client=object())
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
        assert first is second
    channel.pool = object()  # the channel reconnected
    with channel.conn_or_acquire() as third:
        assert third is not first
    assert channel.made == 2


def test_a_channel_closing_after_its_connection_fails_as_a_lost_connection() -> None:
    """Seen under a Sentinel failover: the channel's close restores unacked messages after the connection
    was closed; the error must be one kombu's closing code ignores, not one that stops the worker."""
    channel = _Channel(client=None)
    with pytest.raises(RedisConnectionError), channel.conn_or_acquire():
        pass
    assert (
        RedisConnectionError
        in kombu_redis.Transport(client=SimpleNamespace(transport_options={})).connection_errors
    )


def test_a_publish_on_a_channel_already_closed_fails_as_a_lost_connection() -> None:
    """Seen in a Redis restart: a pooled producer kept a channel kombu had closed (its connection None), and
    the reaper request a consumer publishes as it reconnects stopped the worker with an AttributeError. A
    connection error is one the publish's retry recovers from, on a new channel."""
    channel = _Channel(client=object())
    channel.connection = None
    with pytest.raises(RedisConnectionError), channel.conn_or_acquire():
        pass
