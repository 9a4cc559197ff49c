"""The in-process API behind three tokens: an operator's plain one, and research's and an owner's, hashed
in the file (gateway.auth.tokens). For the tests of what a token may see and do; a test module takes the
``config`` and ``http`` fixtures by importing them (``scoped_config``, ``scoped_http``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import fakeredis
import pytest
from fastapi.testclient import TestClient

from clawbus.api.app import create_app
from clawbus.api.services import Services
from clawbus.api.waits import RunWaiter
from clawbus.shared.config import Config
from clawbus.shared.store.live import LiveStore
from clawbus.shared.store.server_clock import ServerClock
from clawbus.workers.testing import world
from tests.conftest import make_config

RESEARCH = "research-token-0123456789"
OWNER = "owner-token-0123456789abc"
OPERATOR = "plain-operator-token"


def hashed(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@pytest.fixture(name="config")
def scoped_config() -> Config:
    return make_config(
        {
            "gateway": {
                "auth": {
                    "tokens": [
                        OPERATOR,
                        {"name": "research-bot", "sha256": hashed(RESEARCH), "agents": ["research"]},
                        {"name": "admin", "sha256": hashed(OWNER), "agents": ["*"], "owner": True},
                    ]
                }
            },
            "commands": {"ownerAllowFrom": ["webchat:boss"]},
        }
    )


@pytest.fixture(name="http")
def scoped_http(config: Config) -> Iterator[TestClient]:
    server = fakeredis.FakeServer()
    redis = fakeredis.FakeRedis(server=server, decode_responses=True)
    w = world(config, clock=ServerClock(redis), redis=redis)

    def build(config: Config) -> Services:
        async_redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
        live = LiveStore.on(async_redis, w.store.keys)
        return Services(config, w.store, w.dispatcher, RunWaiter(live), live)

    with TestClient(create_app(config, services=build)) as client:
        yield client


def as_token(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
