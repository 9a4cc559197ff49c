"""shared/store/clients.py: a store client that cannot reach Redis, once redis-py's retries are spent, raises
StoreUnavailable (redis-py's error its cause), whether a command, a pipeline or a pub/sub connection failed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import fakeredis
import pytest
from redis import ConnectionPool
from redis.asyncio import ConnectionPool as AsyncConnectionPool
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.retry import Retry

from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.store.clients import AsyncStoreClient, StoreClient
from clawbus.shared.store.connection import RETRY_ON

# What a case prepares on a fresh client, and the call that then finds Redis away.
SyncCall = tuple[Callable[[StoreClient], Any], Callable[[Any], Any]]
AsyncCall = tuple[Callable[[AsyncStoreClient], Awaitable[Any]], Callable[[Any], Awaitable[Any]]]


def store_client(server: fakeredis.FakeServer, retry: Retry | None = None) -> StoreClient:
    pool = ConnectionPool(
        connection_class=fakeredis.FakeRedisConnection,
        server=server,
        retry=retry or Retry(NoBackoff(), 0),
        retry_on_error=RETRY_ON,
    )
    return StoreClient(connection_pool=pool)


def async_store_client(server: fakeredis.FakeServer) -> AsyncStoreClient:
    pool = AsyncConnectionPool(
        connection_class=fakeredis.FakeAsyncRedisConnection,
        server=server,
        retry=AsyncRetry(NoBackoff(), 0),
        retry_on_error=RETRY_ON,
    )
    return AsyncStoreClient(connection_pool=pool)


def lost(*_: Any, **__: Any) -> Any:
    raise RedisConnectionError("Connection closed by server.")


async def lost_async(*_: Any, **__: Any) -> Any:
    raise RedisConnectionError("Connection closed by server.")


def _read_lost(client: StoreClient) -> Any:
    """A pub/sub connection whose next read finds the connection gone (fakeredis fails only sends)."""
    pubsub = client.pubsub()
    pubsub.subscribe("c")
    pubsub.connection.can_read = lost
    return pubsub


SYNC_CALLS: dict[str, SyncCall] = {
    "a command": (lambda client: client, lambda client: client.get("k")),
    "a pipeline": (lambda client: client.pipeline().get("k"), lambda pipe: pipe.execute()),
    "a watch (sent at once, before MULTI)": (lambda client: client.pipeline(), lambda pipe: pipe.watch("k")),
    "a subscribe": (lambda client: client.pubsub(), lambda pubsub: pubsub.subscribe("c")),
    "a pub/sub read": (_read_lost, lambda pubsub: pubsub.get_message(timeout=0.1)),
}


@pytest.mark.parametrize("call", SYNC_CALLS.values(), ids=SYNC_CALLS.keys())
def test_a_call_that_cannot_reach_redis_raises_store_unavailable(call: SyncCall) -> None:
    server = fakeredis.FakeServer()
    prepare, send = call
    target = prepare(store_client(server))
    server.connected = False
    with pytest.raises(StoreUnavailable) as caught:
        send(target)
    assert isinstance(caught.value.__cause__, RedisConnectionError)


def test_redis_py_retries_a_lost_connection_before_the_client_gives_up() -> None:
    server = fakeredis.FakeServer()
    tries: list[int] = []

    class RedisComesBack(NoBackoff):
        def compute(self, failures: int) -> float:
            tries.append(failures)
            server.connected = True
            return 0

    client = store_client(server, Retry(RedisComesBack(), 1))
    client.set("k", "v")
    server.connected = False
    assert client.get("k") == b"v"
    assert tries == [1]


def test_an_error_redis_answers_is_not_a_lost_connection() -> None:
    client = store_client(fakeredis.FakeServer())
    client.set("k", "v")
    with pytest.raises(ResponseError):
        client.incr("k")


async def _async_read_lost(client: AsyncStoreClient) -> Any:
    pubsub = client.pubsub()
    await pubsub.subscribe("c")
    pubsub.connection.read_response = lost_async
    return pubsub


async def _async_dropped(client: AsyncStoreClient) -> Any:
    """A pub/sub connection dropped (``RunSignals`` drops it to reconnect)."""
    pubsub = client.pubsub()
    await pubsub.subscribe("c")
    await pubsub.connection.disconnect()
    return pubsub


async def _itself(client: AsyncStoreClient) -> Any:
    return client


async def _a_pubsub(client: AsyncStoreClient) -> Any:
    return client.pubsub()


async def _a_pipeline(client: AsyncStoreClient) -> Any:
    return client.pipeline().get("k")


ASYNC_CALLS: dict[str, AsyncCall] = {
    "a command": (_itself, lambda client: client.get("k")),
    "a pipeline": (_a_pipeline, lambda pipe: pipe.execute()),
    "a subscribe": (_a_pubsub, lambda pubsub: pubsub.subscribe("c")),
    "a pub/sub read": (_async_read_lost, lambda pubsub: pubsub.get_message(timeout=0.1)),
    "a pub/sub reconnect": (_async_dropped, lambda pubsub: pubsub.connect()),
}


@pytest.mark.parametrize("call", ASYNC_CALLS.values(), ids=ASYNC_CALLS.keys())
def test_an_asyncio_call_that_cannot_reach_redis_raises_store_unavailable(call: AsyncCall) -> None:
    server = fakeredis.FakeServer()
    prepare, send = call

    async def attempt() -> None:
        target = await prepare(async_store_client(server))
        server.connected = False
        await send(target)

    with pytest.raises(StoreUnavailable) as caught:
        asyncio.run(attempt())
    assert isinstance(caught.value.__cause__, RedisConnectionError)
