"""How every role reaches Redis: the one at ``redis.url``, or the master Redis Sentinel names
(``redis.sentinel``), asked again after a failover. The store, the API's waits, the broker and the result
backend all come from here, so they agree on where Redis is (docs/architecture.md, "Redis under Sentinel").
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from redis import Redis
from redis import asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel

from shared.config import RedisConfig, SentinelConfig

# A sentinel that does not answer within this is skipped for the next one.
SENTINEL_TIMEOUT_S = 1.0


def sync_client(redis: RedisConfig, **options: Any) -> Redis:
    """A client of the master; under Sentinel its pool finds the master again when a connection fails
    (and drops a connection to a master that was demoted: its writes answer READONLY)."""
    if redis.sentinel is None:
        return Redis.from_url(redis.url, **options)
    sentinel = redis.sentinel
    return Sentinel(sentinel.addresses(), sentinel_kwargs=_sentinel_options(sentinel)).master_for(
        sentinel.master, redis_class=Redis, **_master_options(sentinel), **options
    )


def async_client(redis: RedisConfig, **options: Any) -> aioredis.Redis:
    if redis.sentinel is None:
        return aioredis.Redis.from_url(redis.url, **options)
    sentinel = redis.sentinel
    return AsyncSentinel(sentinel.addresses(), sentinel_kwargs=_sentinel_options(sentinel)).master_for(
        sentinel.master, redis_class=aioredis.Redis, **_master_options(sentinel), **options
    )


def celery_url(redis: RedisConfig) -> str:
    """The broker's and result backend's URL: kombu and Celery take a Sentinel set as ``sentinel://``
    URLs joined by ``;``, the master's name in their transport options (``celery_options``)."""
    if redis.sentinel is None:
        return redis.url
    sentinel = redis.sentinel
    auth = f":{quote(sentinel.password, safe='')}@" if sentinel.password else ""
    return ";".join(f"sentinel://{auth}{host}:{port}/{sentinel.db}" for host, port in sentinel.addresses())


def celery_options(redis: RedisConfig) -> dict[str, Any]:
    if redis.sentinel is None:
        return {}
    return {"master_name": redis.sentinel.master, "sentinel_kwargs": _sentinel_options(redis.sentinel)}


def _sentinel_options(sentinel: SentinelConfig) -> dict[str, Any]:
    options: dict[str, Any] = {
        "socket_timeout": SENTINEL_TIMEOUT_S,
        "socket_connect_timeout": SENTINEL_TIMEOUT_S,
    }
    if sentinel.sentinel_password:
        options["password"] = sentinel.sentinel_password
    return options


def _master_options(sentinel: SentinelConfig) -> dict[str, Any]:
    return {"db": sentinel.db, "password": sentinel.password}
