"""How every role reaches Redis: the one at ``redis.url``, or the master Redis Sentinel names
(``redis.sentinel``), asked again after a failover. The store, the API's waits, the broker and the result
backend all come from here, so they agree on where Redis is (docs/architecture.md, "Redis under Sentinel").

The store's clients retry a command that failed on a lost connection (the policy is here too), and raise
``StoreUnavailable`` once their retries are spent (``shared.store.clients``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from redis import Redis
from redis import asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.exceptions import ConnectionError, RedisError, TimeoutError
from redis.retry import Retry
from redis.sentinel import MasterNotFoundError, Sentinel

from clawbus.shared.base.backoff import delay
from clawbus.shared.config import RedisConfig, SentinelConfig
from clawbus.shared.store.clients import AsyncStoreClient, StoreClient

# A sentinel that does not answer within this is skipped for the next one.
SENTINEL_TIMEOUT_S = 1.0

# A stale connection after a Redis restart or failover fails once; retrying reconnects. Every script that
# changes state answers a repeat of a call (one that ran, its reply lost) as it answered the call
# (docs/architecture.md, "Reliability").
RETRIES = 3
# A worker rides out a Redis restart or failover of this many retries (about 15 s with the backoff): a run
# that was committing then still commits, rather than waiting for its lease to lapse.
WORKER_RETRIES = 10
# The most connections a store client's pool opens. redis-py 7 caps a pool at 100 by default, and a worker
# at the defaults runs 100 threads, each holding a connection while a command of its runs, beside its lease
# keeper and cancel listener: at full load the cap refused connections (``Too many connections``, runs
# failed). Redis's own ``maxclients`` (10,000 by default) is the bound that matters.
MAX_CONNECTIONS = 10_000
# What redis-py retries a command on; once the retries are spent, the store's clients raise StoreUnavailable.
RETRY_ON = [ConnectionError, TimeoutError]
# The API's clients retry once: enough for the stale connection after a restart, and a partition costs a
# request two attempts, not four (``Budget``).
API_RETRIES = 1


@dataclass(frozen=True, slots=True)
class Budget:
    """Timeouts and retries under which a command against a Redis that went silent (a partition: no reset,
    no error) raises within about ``total_s``, retries included: the API's clients
    (``gateway.redisTimeoutSeconds``), so a request answers 503 rather than hang.

    redis-py nests its retries: a command's retry opens a new connection, and that connect retries on its
    own. On a silent Redis a command on a pooled connection costs one read timeout, then the retry's
    connect ``API_RETRIES + 1`` connect timeouts: 0.4 + 2 x 0.2 of the budget, plus about 0.25 s of
    backoff. A read timeout of 0.4 of the budget (2 s by default) is far above any command the API sends,
    except a ``WAIT`` for replicas: it gets its own timeout plus half a second. No health-check PING: its
    retries would nest inside the command's (doubling the worst case), and a dead pooled connection costs
    no more than one read timeout anyway.
    """

    read_s: float
    connect_s: float
    retries: int = API_RETRIES

    @classmethod
    def within(cls, total_s: float, replica_ack_timeout_s: float = 0.0) -> Budget:
        return cls(read_s=max(0.4 * total_s, replica_ack_timeout_s + 0.5), connect_s=0.2 * total_s)


class Backoff:
    """redis-py's retries (its ``AbstractBackoff`` interface) on clawbus's backoff
    (``shared.base.backoff``)."""

    def __init__(self, base: float = 0.1, cap: float = 2.0) -> None:
        self._base, self._cap = base, cap

    def reset(self) -> None:
        """Nothing to reset: every delay is computed from the failure count alone."""

    def compute(self, failures: int) -> float:
        return delay(failures, self._base, self._cap)


class NewestMasterSentinel(Sentinel):
    """Asks every sentinel and follows the one with the newest configuration (the highest config epoch).

    redis-py takes the first sentinel that names a healthy master. Right after a failover a sentinel that
    has not heard of it yet still names the old master, and healthy it is if it was restarted at once:
    a client that asked that sentinel would write to a master whose data the sentinels are about to
    replace. Asking every sentinel costs a round trip each, paid only when a connection is opened.
    """

    def discover_master(self, service_name: str) -> tuple[str, int]:
        states: list[dict[str, Any]] = []
        errors: list[str] = []
        for sentinel in self.sentinels:
            try:
                states.append(sentinel.sentinel_masters().get(service_name) or {})
            except (ConnectionError, TimeoutError) as exc:
                errors.append(f"{sentinel} - {exc!r}")
        return _newest(self, states, service_name, errors)


class AsyncNewestMasterSentinel(AsyncSentinel):
    """``NewestMasterSentinel`` for asyncio clients."""

    async def discover_master(self, service_name: str) -> tuple[str, int]:
        states: list[dict[str, Any]] = []
        errors: list[str] = []
        for sentinel in self.sentinels:
            try:
                states.append((await sentinel.sentinel_masters()).get(service_name) or {})
            except (ConnectionError, TimeoutError) as exc:
                errors.append(f"{sentinel} - {exc!r}")
        return _newest(self, states, service_name, errors)


def _newest(
    manager: Sentinel | AsyncSentinel, states: list[dict[str, Any]], service_name: str, errors: list[str]
) -> tuple[str, int]:
    usable = [state for state in states if state and manager.check_master_state(state, service_name)]
    if not usable:
        raise MasterNotFoundError(
            f"No master found for {service_name!r}{' : ' if errors else ''}{', '.join(errors)}"
        )
    newest = max(usable, key=lambda state: int(state.get("config-epoch", 0)))
    return newest["ip"], int(newest["port"])


def sync_client(redis: RedisConfig, **options: Any) -> Redis:
    """A store client of the master; under Sentinel its pool finds the master again when a connection fails
    (and drops a connection to a master that was demoted: its writes answer READONLY)."""
    if redis.sentinel is None:
        return StoreClient.from_url(redis.url, **options)
    sentinel = redis.sentinel
    return NewestMasterSentinel(sentinel.addresses(), sentinel_kwargs=_sentinel_options(sentinel)).master_for(
        sentinel.master, redis_class=StoreClient, **_master_options(sentinel), **options
    )


def async_client(redis: RedisConfig, **options: Any) -> aioredis.Redis:
    if redis.sentinel is None:
        return AsyncStoreClient.from_url(redis.url, **options)
    sentinel = redis.sentinel
    return AsyncNewestMasterSentinel(
        sentinel.addresses(), sentinel_kwargs=_sentinel_options(sentinel)
    ).master_for(sentinel.master, redis_class=AsyncStoreClient, **_master_options(sentinel), **options)


def connect(redis: RedisConfig, retries: int = RETRIES, budget: Budget | None = None) -> Redis:
    """The store's client; within ``budget`` (the API's), else riding out ``retries`` (workers, tools)."""
    if budget is None:
        # A bounded wait per command: a stalled Redis must surface as an error, not hang a role forever.
        timeouts: dict[str, Any] = {
            "socket_timeout": 30,
            "socket_connect_timeout": 5,
            "health_check_interval": 30,
            "retry": Retry(Backoff(), retries),
        }
    else:
        timeouts = {
            "socket_timeout": budget.read_s,
            "socket_connect_timeout": budget.connect_s,
            "retry": Retry(Backoff(), budget.retries),
        }
    return sync_client(
        redis, decode_responses=True, retry_on_error=RETRY_ON, max_connections=MAX_CONNECTIONS, **timeouts
    )


def answers(url: str) -> bool:
    """A Redis answers at ``url`` (within a second)."""
    try:
        client = Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (RedisError, OSError, ValueError):
        return False


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
