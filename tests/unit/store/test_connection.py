"""shared/store/connection.py: one Redis, or the master a Sentinel set names, for every role."""

from __future__ import annotations

from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelPool
from redis.sentinel import SentinelConnectionPool

from shared.config import Config, RedisConfig
from shared.store import connection

SENTINEL = RedisConfig.model_validate(
    {"sentinel": {"hosts": ["10.0.0.1:26379", "10.0.0.2:26380"], "master": "prod", "password": "p@ss"}}
)


def test_a_single_redis_is_reached_at_its_url() -> None:
    redis = Config().redis
    assert connection.celery_url(redis) == redis.url
    assert connection.celery_options(redis) == {}
    assert connection.sync_client(redis).connection_pool.connection_kwargs["port"] == 6379


def test_celery_gets_one_sentinel_url_per_sentinel_and_the_master_name() -> None:
    assert connection.celery_url(SENTINEL) == (
        "sentinel://:p%40ss@10.0.0.1:26379/0;sentinel://:p%40ss@10.0.0.2:26380/0"
    )
    options = connection.celery_options(SENTINEL)
    assert options["master_name"] == "prod"
    assert "password" not in options["sentinel_kwargs"]  # the sentinels have none of their own here


def test_clients_under_sentinel_ask_the_sentinels_for_the_master_and_connect_lazily() -> None:
    client = connection.sync_client(SENTINEL, decode_responses=True)
    pool = client.connection_pool
    assert isinstance(pool, SentinelConnectionPool)
    assert pool.service_name == "prod"
    assert pool.connection_kwargs["password"] == "p@ss"
    assert [s.connection_pool.connection_kwargs["port"] for s in pool.sentinel_manager.sentinels] == [
        26379,
        26380,
    ]
    async_pool = connection.async_client(SENTINEL).connection_pool
    assert isinstance(async_pool, AsyncSentinelPool)
    assert async_pool.service_name == "prod"
