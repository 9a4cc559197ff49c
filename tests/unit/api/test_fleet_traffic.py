"""api/routes/status.py: GET /v1/status shows each model's traffic beside the fleet's figures: per provider
and model its configured and learned limits, what is in use, the calls waiting and the cooldown."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from clawbus.shared.config import Config
from clawbus.shared.domain.traffic import CallLimits
from clawbus.shared.store import Store
from tests.conftest import make_config
from tests.support.api_app import TOKEN

MODEL = "fake/fast"
LIMITS = CallLimits(requests_per_minute=60, concurrent=1)


@pytest.fixture
def api_config() -> Config:
    return make_config(
        {
            "gateway": {"auth": {"tokens": [TOKEN]}},
            "models": {
                "providers": {
                    "fake": {
                        "type": "openai",
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "limits": {"requestsPerMinute": 60},
                        "models": [{"id": "fast", "limits": {"concurrent": 1}}, {"id": "idle"}],
                    }
                }
            },
        }
    )


def admit(store: Store, waiter: str, tokens: int = 50) -> str | None:
    answer = store.traffic.admit(
        MODEL,
        waiter,
        klass=0,
        flow="main|main",
        weight=1,
        limits=LIMITS,
        tokens=tokens,
        hold_ms=60_000,
        grace_ms=5_000,
    )
    return answer.ticket


def test_the_fleet_view_shows_each_models_limits_use_waiting_and_cooldown(
    http: TestClient, api_store: Store
) -> None:
    ticket = admit(api_store, "run-1")
    assert ticket is not None
    assert admit(api_store, "run-2") is None  # one at a time: it waits
    models = {row["model"]: row for row in http.get("/v1/status").json()["models"]}
    assert models[MODEL] == {
        "model": MODEL,
        "provider": "fake",
        "modelId": "fast",
        "limits": {"requestsPerMinute": 60, "concurrent": 1},
        "learned": {},
        "requestsInWindow": 1,
        "tokensInWindow": 50,
        "inFlight": 1,
        "waiting": 1,
        "cooldownMs": 0,
    }
    assert models["fake/idle"]["limits"] == {"requestsPerMinute": 60}
    assert models["fake/idle"]["inFlight"] == 0


def test_a_429_shows_its_cooldown_and_the_limits_learned_from_the_provider(
    http: TestClient, api_store: Store
) -> None:
    ticket = admit(api_store, "run-1")
    assert ticket is not None
    api_store.traffic.settle(
        MODEL,
        ticket,
        tokens_used=None,
        cooldown_ms=30_000,
        learned=CallLimits(requests_per_minute=20, tokens_per_minute=4_000),
        rate_limited=True,
    )
    row = {row["model"]: row for row in http.get("/v1/status").json()["models"]}[MODEL]
    assert row["learned"] == {"requestsPerMinute": 20, "tokensPerMinute": 4_000}
    assert 25_000 < row["cooldownMs"] <= 30_000
    assert row["inFlight"] == 0
