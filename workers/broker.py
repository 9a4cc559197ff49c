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


class _OnePublisher:
    _publisher: Any = None
    pool: Any
    _create_client: Any

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        publisher = self._publisher
        if publisher is None or publisher.connection_pool is not self.pool:
            publisher = self._publisher = self._create_client()
        yield publisher


class Channel(_OnePublisher, kombu_redis.Channel):
    pass


class SentinelChannel(_OnePublisher, kombu_redis.SentinelChannel):
    """Under Sentinel the pool is the channel's Sentinel-managed one: a publisher built on it follows the
    master through a failover."""


class Transport(kombu_redis.Transport):
    Channel = Channel


class SentinelTransport(kombu_redis.SentinelTransport):
    Channel = SentinelChannel


TRANSPORT = f"{__name__}:Transport"
SENTINEL_TRANSPORT = f"{__name__}:SentinelTransport"
