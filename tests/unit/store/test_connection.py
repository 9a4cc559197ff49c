"""shared/store/connection.py: one Redis, or the master a Sentinel set names, for every role."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelPool
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.sentinel import MasterNotFoundError, SentinelConnectionPool

from clawbus.shared.config import Config, RedisConfig
from clawbus.shared.store import connection
from clawbus.shared.store.clients import AsyncStoreClient, StoreClient

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


@pytest.mark.parametrize("redis", [Config().redis, SENTINEL], ids=["one Redis", "Sentinel"])
def test_the_store_and_the_waits_get_clients_that_fail_as_store_unavailable(redis: RedisConfig) -> None:
    assert isinstance(connection.connect(redis), StoreClient)
    assert isinstance(connection.async_client(redis), AsyncStoreClient)


def test_both_passwords_reach_every_role() -> None:
    """The master's password goes to the master connections of the store, the waits' pub/sub, the broker
    and the result backend; the sentinels' own to every connection to a sentinel."""
    guarded = RedisConfig.model_validate(
        {
            "sentinel": {
                "hosts": ["10.0.0.1:26379"],
                "master": "prod",
                "password": "m",
                "sentinelPassword": "s",
            }
        }
    )
    store = connection.sync_client(guarded).connection_pool
    waits = connection.async_client(guarded).connection_pool
    for pool in (store, waits):
        assert pool.connection_kwargs["password"] == "m"
        assert [
            sentinel.connection_pool.connection_kwargs["password"]
            for sentinel in pool.sentinel_manager.sentinels
        ] == ["s"]
    assert connection.celery_url(guarded) == "sentinel://:m@10.0.0.1:26379/0"  # broker and result backend
    assert connection.celery_options(guarded)["sentinel_kwargs"]["password"] == "s"


def _state(port: int, epoch: int, *flags: str) -> dict[str, Any]:
    return {
        "ip": "10.0.0.9",
        "port": port,
        "config-epoch": epoch,
        "num-other-sentinels": 2,
        "is_master": "master" in flags or not flags,
        "is_sdown": "s_down" in flags,
        "is_odown": "o_down" in flags,
    }


class _Answers:
    """A sentinel as the manager sees it: its SENTINEL MASTERS answer, or a connection error."""

    def __init__(self, state: dict[str, Any] | None) -> None:
        self._state = state

    def sentinel_masters(self) -> dict[str, Any]:
        if self._state is None:
            raise RedisConnectionError("sentinel away")
        return {"prod": self._state}


class _AsyncAnswers(_Answers):
    async def sentinel_masters(self) -> dict[str, Any]:  # type: ignore[override]
        return super().sentinel_masters()


def _manager(*answers: dict[str, Any] | None) -> connection.NewestMasterSentinel:
    manager = connection.NewestMasterSentinel([("10.0.0.1", 26379)])
    manager.sentinels = [_Answers(state) for state in answers]
    return manager


def test_after_a_failover_the_master_of_the_newest_configuration_wins_over_a_lagging_sentinel() -> None:
    """The first sentinel has not heard of the failover and names the old master, restarted and healthy."""
    manager = _manager(_state(6379, 1), None, _state(6380, 2))
    assert manager.discover_master("prod") == ("10.0.0.9", 6380)


def test_a_master_a_sentinel_sees_down_is_never_chosen() -> None:
    manager = _manager(_state(6379, 3, "master", "s_down"), _state(6380, 2))
    assert manager.discover_master("prod") == ("10.0.0.9", 6380)


def test_no_sentinel_naming_a_healthy_master_is_an_error_naming_the_ones_that_failed() -> None:
    manager = _manager(None, _state(6379, 1, "master", "o_down"))
    with pytest.raises(MasterNotFoundError, match=r"No master found for 'prod' : .*ConnectionError"):
        manager.discover_master("prod")


def test_the_asyncio_clients_choose_the_same_master() -> None:
    manager = connection.AsyncNewestMasterSentinel([("10.0.0.1", 26379)])
    manager.sentinels = [_AsyncAnswers(_state(6379, 1)), _AsyncAnswers(_state(6380, 2))]
    assert asyncio.run(manager.discover_master("prod")) == ("10.0.0.9", 6380)


def test_the_apis_budget_bounds_a_command_against_a_silent_redis_retries_included() -> None:
    budget = connection.Budget.within(5)
    # A read timeout on the pooled connection, then the retry's connect, which redis-py tries twice itself.
    assert budget.read_s + (budget.retries + 1) * budget.connect_s <= 0.8 * 5
    kwargs = connection.connect(Config().redis, budget=budget).connection_pool.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["socket_connect_timeout"]) == (budget.read_s, budget.connect_s)
    assert kwargs["retry"].get_retries() == connection.API_RETRIES
    assert not kwargs.get("health_check_interval")  # its retries would nest inside the command's


def test_a_read_under_the_budget_outlasts_a_wait_for_replicas() -> None:
    assert connection.Budget.within(5, replica_ack_timeout_s=3).read_s == 3.5


def test_workers_keep_their_long_retries() -> None:
    kwargs = connection.connect(Config().redis, connection.WORKER_RETRIES).connection_pool.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["retry"].get_retries()) == (30, connection.WORKER_RETRIES)
