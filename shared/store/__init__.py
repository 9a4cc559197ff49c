"""The Redis adapter: the only code that talks to Redis about sessions, transcripts and runs. Its client
comes from ``shared.store.connection`` (and fails as ``shared.store.errors.StoreUnavailable``)."""

from __future__ import annotations

from redis import Redis

from clawbus.shared.base.clock import Clock
from clawbus.shared.config import Config
from clawbus.shared.store.a2a import A2AStore
from clawbus.shared.store.budgets import BudgetStore
from clawbus.shared.store.cold import ColdTranscripts
from clawbus.shared.store.connection import RETRIES, Budget, connect
from clawbus.shared.store.fleet import FleetStore
from clawbus.shared.store.flows import FlowStore
from clawbus.shared.store.idempotency import IdempotencyStore
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.model_calls import ModelCallStore
from clawbus.shared.store.runs import RunStore
from clawbus.shared.store.scripts import Scripts
from clawbus.shared.store.server_clock import ServerClock
from clawbus.shared.store.sessions import SessionStore
from clawbus.shared.store.state_log import StateLogStore
from clawbus.shared.store.threads import ThreadBindingStore
from clawbus.shared.store.traffic import TrafficStore
from clawbus.shared.store.transcripts import TranscriptStore

__all__ = ["Store"]


class Store:
    def __init__(
        self, client: Redis, config: Config, clock: Clock | None = None, replica_acks: int | None = None
    ) -> None:
        """``clock``: what "now" is (default Redis's own, ``ServerClock``: hosts' clocks differ);
        ``replica_acks``: replicas an accept waits for (default ``redis.replicaAcks``); see
        ``from_config``."""
        self.redis = client
        self.clock: Clock = clock or ServerClock(client)
        self.keys = RedisKeys(config.redis.prefix)
        scripts = Scripts(client)
        self.sessions = SessionStore(client, self.keys, scripts)
        self.transcripts = TranscriptStore(
            client, self.keys, scripts, ColdTranscripts(config.store_url()), self.clock
        )
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
        self.calls = ModelCallStore(client, self.traffic, self.budgets, self.runs)
        self.idempotency = IdempotencyStore(client, self.keys)
        self.state = StateLogStore(client, self.keys, scripts)

    @classmethod
    def from_config(
        cls,
        config: Config,
        clock: Clock | None = None,
        retries: int = RETRIES,
        replica_acks: int | None = None,
        budget: Budget | None = None,
    ) -> Store:
        """``budget``: the API's bound on a command (``shared.store.connection.Budget``); ``retries`` then
        does not count."""
        return cls(connect(config.redis, retries, budget), config, clock, replica_acks)
