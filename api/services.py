"""What one API process holds for its lifetime, built from the config at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from clawbus.api.waits import RunWaiter
from clawbus.shared.config import Config
from clawbus.shared.ports.context import Context
from clawbus.shared.ports.live import Live
from clawbus.shared.store import Store
from clawbus.shared.store.connection import Budget
from clawbus.shared.store.live import LiveStore
from clawbus.workers.celery_app import create_app
from clawbus.workers.dispatch import CeleryDispatcher

WAITS_CLIENT_NAME = "clawbus-api-waits"


@dataclass(frozen=True)
class Services(Context):
    # The Redis adapter itself: the API process closes its connections at shutdown.
    store: Store
    waiter: RunWaiter
    live: Live

    @classmethod
    def build(cls, config: Config) -> Services:
        # A request answers 503 once Redis has not answered for gateway.redisTimeoutSeconds.
        budget = Budget.within(
            config.gateway.redis_timeout_seconds, config.redis.replica_ack_timeout_ms / 1000
        )
        store = Store.from_config(config, budget=budget)
        live = LiveStore(config.redis, store.keys, client_name=WAITS_CLIENT_NAME, budget=budget)
        dispatcher = CeleryDispatcher(create_app(config))
        return cls(config, store, dispatcher, RunWaiter(live, confirm_within_s=budget.read_s), live)

    async def start(self) -> None:
        await self.waiter.start()

    async def close(self) -> None:
        await self.waiter.close()
        await self.live.close()
        self.store.redis.close()
