"""api/routes/budgets.py: GET /v1/budgets shows every agent's spend today and every active sub-agent tree
against its budget, and PUT /v1/agents/{agentId}/budget changes an agent's budget at runtime (owner tokens)."""

from __future__ import annotations

import hashlib

import pytest
from fastapi.testclient import TestClient

from clawbus.shared.config import Config
from clawbus.shared.domain.budgets import UNLIMITED, Override, day_of
from clawbus.shared.store import Store
from tests.conftest import make_config
from tests.support.api_app import TOKEN
from tests.support.budgets import spend

AGENT_TOKEN = "research-only-token-0123"


@pytest.fixture
def api_config() -> Config:
    digest = hashlib.sha256(AGENT_TOKEN.encode()).hexdigest()
    return make_config(
        {
            "gateway": {
                "auth": {"tokens": [TOKEN, {"name": "bot", "sha256": digest, "agents": ["research"]}]}
            },
            "session": {"agentToAgent": {"maxChainCostUsd": 1.0}},
            "agents": {
                "defaults": {"budget": {"dailyUsd": 2.0}, "subagents": {"maxTreeCostUsd": 1.5}},
                "list": [
                    {"id": "main", "default": True, "budget": {"dailyTokens": 10_000}},
                    {"id": "research"},
                ],
            },
        }
    )


def test_budgets_show_each_agents_spend_today_against_its_configured_budget(
    http: TestClient, api_store: Store
) -> None:
    spend(api_store, "main", 500_000, 1_200)
    view = http.get("/v1/budgets").json()
    assert view["day"] == day_of(api_store.clock.now_ms())
    rows = {row["agentId"]: row for row in view["agents"]}
    assert rows["main"] == {
        "agentId": "main",
        "spentUsd": 0.5,
        "spentTokens": 1_200,
        "dailyUsd": 2.0,
        "dailyTokens": 10_000,
        "leftUsd": 1.5,
        "leftTokens": 8_800,
        "source": "config",
    }
    assert (
        rows["research"]["spentUsd"],
        rows["research"]["dailyTokens"],
        rows["research"]["leftTokens"],
    ) == (
        0.0,
        None,
        None,
    )


def test_budgets_list_the_trees_that_spent_in_the_last_day(http: TestClient, api_store: Store) -> None:
    spend(api_store, "main", 2_000_000, 300, root="agent:main:main")
    [tree] = http.get("/v1/budgets").json()["trees"]
    assert tree == {
        "rootKey": "agent:main:main",
        "spentUsd": 2.0,
        "spentTokens": 300,
        "maxTreeCostUsd": 1.5,
        "leftUsd": 0.0,
    }


def test_an_owner_sets_a_budget_at_runtime_and_the_store_holds_it_for_every_worker(
    http: TestClient, api_store: Store
) -> None:
    spend(api_store, "research", 250_000, 100)
    answer = http.put("/v1/agents/research/budget", json={"dailyUsd": 1, "dailyTokens": 500})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "agentId": "research",
        "spentUsd": 0.25,
        "spentTokens": 100,
        "dailyUsd": 1.0,
        "dailyTokens": 500,
        "leftUsd": 0.75,
        "leftTokens": 400,
        "source": "runtime",
    }
    assert api_store.budgets.override("research") == Override(1_000_000, 500)
    assert {row["agentId"]: row for row in http.get("/v1/budgets").json()["agents"]}[
        "research"
    ] == answer.json()


def test_null_lifts_a_limit_and_a_field_left_out_is_the_configurations(
    http: TestClient, api_store: Store
) -> None:
    row = http.put("/v1/agents/main/budget", json={"dailyUsd": None}).json()
    assert (row["dailyUsd"], row["leftUsd"], row["dailyTokens"], row["source"]) == (
        None,
        None,
        10_000,
        "runtime",
    )
    assert api_store.budgets.override("main") == Override(UNLIMITED, None)
    row = http.put("/v1/agents/main/budget", json={}).json()
    assert (row["dailyUsd"], row["dailyTokens"], row["source"]) == (2.0, 10_000, "config")


def test_a_runtime_budget_of_zero_stops_the_agent_spending(http: TestClient) -> None:
    row = http.put("/v1/agents/main/budget", json={"dailyTokens": 0}).json()
    assert (row["dailyTokens"], row["leftTokens"]) == (0, 0)


def test_a_whole_number_of_tokens_written_with_a_point_is_taken(http: TestClient) -> None:
    row = http.put("/v1/agents/main/budget", json={"dailyTokens": 500.0}).json()
    assert row["dailyTokens"] == 500


def test_an_unknown_agent_is_404(http: TestClient) -> None:
    answer = http.put("/v1/agents/nobody/budget", json={"dailyUsd": 1})
    assert answer.status_code == 404
    assert answer.json()["error"] == {"type": "not_found", "message": "Agent not found: nobody"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"dailyUsd": -1}, "dailyUsd"),
        ({"dailyUsd": "5"}, "dailyUsd"),
        ({"dailyUsd": True}, "dailyUsd"),
        ({"dailyTokens": 1.5}, "dailyTokens"),
        ({"dailyTokens": True}, "dailyTokens"),
        ({"dailyTokens": "5"}, "dailyTokens"),
        ({"dailyTokens": -3}, "dailyTokens"),
        ({"dailyTokens": 10**16}, "dailyTokens"),
        ({"weekly": 3}, "weekly"),
    ],
)
def test_a_bad_budget_is_400_naming_the_field(http: TestClient, body: dict[str, object], field: str) -> None:
    answer = http.put("/v1/agents/main/budget", json=body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["type"], error["field"]) == ("invalid_request", field)
    assert error["message"].startswith(f"{field}: ")


def test_budgets_need_an_owner_token(http: TestClient) -> None:
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    assert http.get("/v1/budgets", headers=headers).status_code == 403
    assert http.put("/v1/agents/research/budget", json={"dailyUsd": 1}, headers=headers).status_code == 403
    assert http.get("/v1/budgets", headers={"Authorization": "Bearer wrong"}).status_code == 401


def test_a_chain_shows_what_its_runs_spent_against_the_chain_budget_and_its_guards(
    http: TestClient, api_store: Store
) -> None:
    api_store.redis.hset(api_store.keys.chain_spent("run-1"), mapping={"usdMicros": 250_000, "tokens": 900})
    assert http.get("/v1/chains/run-1").json() == {
        "chainId": "run-1",
        "spentUsd": 0.25,
        "spentTokens": 900,
        "maxChainCostUsd": 1.0,
        "maxChainTokens": None,
        "maxHops": 8,
        "maxCycles": 1,
    }
    # A chain that spent nothing (or runs with no chain budget set) reads 0.
    assert http.get("/v1/chains/other").json()["spentUsd"] == 0.0
    headers = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    assert http.get("/v1/chains/run-1", headers=headers).status_code == 403
