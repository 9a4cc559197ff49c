"""kombu's Redis transport, with one publishing client per channel instead of one per command.

The stock channel builds a new ``redis.Redis`` for every publish and every ack; with redis-py 8 each one
builds its table of response callbacks first, which costs more than the command's own round trip on
loopback. A ``redis.Redis`` holds no connection of its own (it borrows from the channel's pool per
command) and is thread-safe, so one per channel serves every publish. If the channel replaces its pool
(after a reconnect), the client is rebuilt on the new one.

Selected with ``broker_transport`` (``workers.celery_app``); the broker URL stays ``redis://`` (or the
``sentinel://`` set, with ``SentinelTransport``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError

from clawbus.shared.store.connection import NewestMasterSentinel


class _OnePublisher:
    _publisher: Any = None
    pool: Any
    connection: Any
    _create_client: Any

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        if self.connection is None or self.connection.client is None:
            # A broker outage can close the connection under the channel before the channel itself closes
            # and tries to put its unacknowledged messages back: no pool can be built any more, and kombu's
            # own attempt raised an AttributeError that stopped the worker for good. A connection error is
            # what closing code ignores; the messages stay in the unacked hash, from which kombu restores
            # them after the visibility timeout. A channel already closed (no connection at all) is one a
            # pooled producer may still hold after a reconnect: a connection error makes the publish's retry
            # revive it on a new channel (an AttributeError here stopped a worker whose consumer published
            # its reaper request as it came back).
            raise RedisConnectionError("the broker connection is already closed")
        publisher = self._publisher
        if publisher is None or publisher.connection_pool is not self.pool:
            publisher = self._publisher = self._create_client()
        yield publisher


class Channel(_OnePublisher, kombu_redis.Channel):
    pass


class SentinelChannel(_OnePublisher, kombu_redis.SentinelChannel):
    """Under Sentinel the pool is the channel's Sentinel-managed one: a publisher built on it follows the
    master through a failover."""

    def _sentinel_managed_pool(self, asynchronous: bool = False) -> Any:
        pool = super()._sentinel_managed_pool(asynchronous)
        # kombu builds a plain redis-py Sentinel; the broker must find the master as the store does
        # (shared/store/connection.py), or after a failover the two could talk to different masters. The
        # subclass adds no state, so the instance can take its class.
        pool.sentinel_manager.__class__ = NewestMasterSentinel
        return pool


class Transport(kombu_redis.Transport):
    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel


TRANSPORT = f"{__name__}:Transport"
SENTINEL_TRANSPORT = f"{__name__}:SentinelTransport"
