"""The Redis adapter: the only code that talks to Redis about sessions, transcripts and runs."""

from __future__ import annotations

from redis import Redis
from redis.exceptions import ConnectionError, RedisError, TimeoutError
from redis.retry import Retry

from shared.backoff import delay
from shared.clock import Clock, SystemClock
from shared.config import Config, RedisConfig
from shared.store.a2a import A2AStore
from shared.store.budgets import BudgetStore
from shared.store.cold import ColdTranscripts
from shared.store.connection import sync_client
from shared.store.errors import NotReplicated
from shared.store.fleet import FleetStore
from shared.store.flows import FlowStore
from shared.store.idempotency import IdempotencyStore
from shared.store.keys import RedisKeys
from shared.store.model_calls import ModelCallStore
from shared.store.runs import RunStore
from shared.store.scripts import Scripts
from shared.store.sessions import SessionStore
from shared.store.threads import ThreadBindingStore
from shared.store.traffic import TrafficStore
from shared.store.transcripts import TranscriptStore

__all__ = [
    "RETRIES",
    "RETRY_ON",
    "UNAVAILABLE",
    "WORKER_RETRIES",
    "Backoff",
    "Store",
    "answers",
    "backoff",
    "connect",
]


# A stale connection after a Redis restart or failover fails once; retrying reconnects. Every script that
# changes state answers a repeat of a call (one that ran, its reply lost) as it answered the call
# (docs/architecture.md, "Reliability").
RETRIES = 3
# A worker rides out a Redis restart or failover of this many retries (about 15 s with the backoff): a run
# that was committing then still commits, rather than waiting for its lease to lapse.
WORKER_RETRIES = 10
RETRY_ON = [ConnectionError, TimeoutError]
# What a caller sees when Redis is away (after the retries): the API answers them with a 503.
UNAVAILABLE: tuple[type[Exception], ...] = (ConnectionError, TimeoutError, NotReplicated)


class Backoff:
    """redis-py's retries (its ``AbstractBackoff`` interface) on clawbus's backoff (``shared.backoff``)."""

    def __init__(self, base: float = 0.1, cap: float = 2.0) -> None:
        self._base, self._cap = base, cap

    def reset(self) -> None:
        """Nothing to reset: every delay is computed from the failure count alone."""

    def compute(self, failures: int) -> float:
        return delay(failures, self._base, self._cap)


def backoff() -> Backoff:
    return Backoff()


def connect(redis: RedisConfig, retries: int = RETRIES) -> Redis:
    # A bounded wait per command: a stalled Redis must surface as an error, not hang a request forever.
    return sync_client(
        redis,
        decode_responses=True,
        socket_timeout=30,
        socket_connect_timeout=5,
        health_check_interval=30,
        retry=Retry(backoff(), retries),
        retry_on_error=RETRY_ON,
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


class Store:
    def __init__(
        self, client: Redis, config: Config, clock: Clock | None = None, replica_acks: int | None = None
    ) -> None:
        """``replica_acks``: replicas an accept waits for (default ``redis.replicaAcks``); see
        ``from_config``."""
        self.redis = client
        self.clock: Clock = clock or SystemClock()
        self.keys = RedisKeys(config.redis.prefix)
        scripts = Scripts(client)
        self.sessions = SessionStore(client, self.keys, scripts)
        self.transcripts = TranscriptStore(client, self.keys, scripts, ColdTranscripts(config.store_url()))
        self.runs = RunStore(
            client,
            self.keys,
            scripts,
            self.clock,
            dispatch_grace_ms=int(config.runs.dispatch_grace_seconds * 1000),
            retention_seconds=config.runs.retention_hours * 3600,
            replica_acks=config.redis.acks_wanted if replica_acks is None else replica_acks,
            replica_ack_timeout_ms=config.redis.replica_ack_timeout_ms,
        )
        self.flows = FlowStore(
            client, self.keys, scripts, self.clock, grace_ms=int(config.runs.dispatch_grace_seconds * 1000)
        )
        self.fleet = FleetStore(client, self.keys)
        self.threads = ThreadBindingStore(client, self.keys)
        self.a2a = A2AStore(client, self.keys, scripts, retention_seconds=config.runs.retention_hours * 3600)
        self.traffic = TrafficStore(client, self.keys, scripts)
        self.budgets = BudgetStore(client, self.keys, scripts)
        self.calls = ModelCallStore(client, self.traffic, self.budgets)
        self.idempotency = IdempotencyStore(client, self.keys)

    @classmethod
    def from_config(
        cls,
        config: Config,
        clock: Clock | None = None,
        retries: int = RETRIES,
        replica_acks: int | None = None,
    ) -> Store:
        return cls(connect(config.redis, retries), config, clock, replica_acks)
