"""The FastAPI app in-process over the test world (``clawbus.workers.testing.world``): its fakeredis, its store
and its inline dispatcher, which records instead of Celery; on Redis's clock, which the API's waits need."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import fakeredis
import pytest
from fastapi.testclient import TestClient

from clawbus.api.app import create_app
from clawbus.api.services import Services
from clawbus.api.waits import RunWaiter
from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.store.live import LiveStore
from clawbus.shared.store.server_clock import ServerClock
from clawbus.workers.testing import InlineDispatcher, World, world
from tests.conftest import make_config
from tests.support.api_app import TOKEN


@pytest.fixture
def api_config() -> Config:
    return make_config(
        {"gateway": {"auth": {"tokens": [TOKEN]}, "limits": {"bodyBytes": 4096, "messageBytes": 1024}}}
    )


@pytest.fixture
def server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()


@pytest.fixture
def api_world(server: fakeredis.FakeServer, api_config: Config) -> World:
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    return world(api_config, clock=ServerClock(client), redis=client)


@pytest.fixture
def recorded(api_world: World) -> InlineDispatcher:
    return api_world.dispatcher


@pytest.fixture
def api_store(api_world: World) -> Store:
    return api_world.store


@pytest.fixture
def services(
    api_store: Store, server: fakeredis.FakeServer, recorded: InlineDispatcher
) -> Callable[[Config], Services]:
    """What an app holds, over the test's fakeredis, for ``create_app(services=...)``."""

    def build(config: Config) -> Services:
        async_redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
        live = LiveStore.on(async_redis, api_store.keys)
        return Services(config, api_store, recorded, RunWaiter(live), live)

    return build


@pytest.fixture
def http(api_config: Config, services: Callable[[Config], Services]) -> Iterator[TestClient]:
    with TestClient(create_app(api_config, services=services)) as client:
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        yield client
