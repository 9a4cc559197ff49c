"""What one API process holds for its lifetime, built from the config at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.retry import Retry as AsyncRetry

from api.waits import RunWaiter
from shared.config import Config
from shared.store import RETRIES, RETRY_ON, Store, backoff
from workers.celery_app import create_app
from workers.dispatch import CeleryDispatcher

WAITS_CLIENT_NAME = "clawbus-api-waits"


@dataclass
class Services:
    config: Config
    store: Store
    dispatcher: CeleryDispatcher
    waiter: RunWaiter
    async_redis: AsyncRedis

    @classmethod
    def build(cls, config: Config) -> Services:
        store = Store.from_config(config)
        # Named, so an operator (or a test) can tell the waits' pub/sub connection apart in CLIENT LIST.
        async_redis = AsyncRedis.from_url(
            config.redis.url,
            decode_responses=True,
            socket_keepalive=True,
            socket_connect_timeout=5,
            client_name=WAITS_CLIENT_NAME,
            retry=AsyncRetry(backoff(), RETRIES),
            retry_on_error=RETRY_ON,
        )
        dispatcher = CeleryDispatcher(create_app(config))
        return cls(config, store, dispatcher, RunWaiter(async_redis, store.keys), async_redis)

    async def start(self) -> None:
        await self.waiter.start()

    async def close(self) -> None:
        await self.waiter.close()
        await self.async_redis.aclose()
        self.store.redis.close()
