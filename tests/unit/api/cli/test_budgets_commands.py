"""api/cli/budgets.py (`clawbus budgets`, `clawbus budgets set`) and the model, cold store and stalled runs
lines of `clawbus status`, against the in-process API; api/client.py's budget methods."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from clawbus_client import APIError, Client
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from clawbus.api.cli import app, budgets, operator
from clawbus.api.cli.budgets import limit_of
from clawbus.shared.config import Config
from clawbus.shared.domain.budgets import Override, day_of
from clawbus.shared.domain.traffic import CallLimits
from clawbus.shared.store import Store
from tests.conftest import make_config
from tests.support.api_app import TOKEN, client_through
from tests.support.budgets import spend
from tests.support.cold import refused_move
from tests.support.runs import stalled


@pytest.fixture
def api_config() -> Config:
    return make_config(
        {
            "gateway": {"auth": {"tokens": [TOKEN]}},
            "agents": {"defaults": {"budget": {"dailyUsd": 2.0}, "subagents": {"maxTreeCostUsd": 1.0}}},
            "models": {
                "providers": {
                    "fake": {
                        "type": "openai",
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "models": [{"id": "fast", "limits": {"requestsPerMinute": 60, "concurrent": 2}}],
                    }
                }
            },
        }
    )


@pytest.fixture
def clawbus(http: TestClient, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The commands call the in-process API, whatever --url and --token say."""
    for module in (budgets, operator):
        monkeypatch.setattr(module, "client_for", lambda _url, _token: client_through(http))
    return CliRunner()


def run(runner: CliRunner, *args: str, code: int = 0) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


@pytest.mark.parametrize(
    ("text", "whole", "value"),
    [
        (None, False, ...),
        ("none", False, None),
        ("Unlimited", True, None),
        ("2.5", False, 2.5),
        ("0", True, 0),
    ],
)
def test_a_budget_option_is_a_number_none_or_left_out(text: str | None, whole: bool, value: object) -> None:
    assert limit_of(text, "--daily-usd", whole=whole) == value


@pytest.mark.parametrize(("text", "whole"), [("lots", False), ("1.5", True), ("-1", False), ("inf", False)])
def test_a_bad_budget_option_is_refused_before_any_call(text: str, whole: bool) -> None:
    with pytest.raises(typer.BadParameter):
        limit_of(text, "--daily-tokens", whole=whole)


def test_budgets_prints_each_agents_day_and_the_active_trees(clawbus: CliRunner, api_store: Store) -> None:
    spend(api_store, "main", 500_000, 1_200, root="agent:main:main")
    lines = run(clawbus, "budgets").stdout.splitlines()
    assert lines[0] == f"day {day_of(api_store.clock.now_ms())} (UTC)"
    assert lines[1].split() == [
        "agent",
        "spent",
        "$",
        "daily",
        "$",
        "left",
        "$",
        "tokens",
        "daily",
        "tokens",
        "left",
        "tokens",
        "source",
    ]
    assert lines[2].split() == ["main", "0.5000", "2.0000", "1.5000", "1200", "-", "-", "config"]
    assert lines[3].split()[0] == "research"
    assert "sub-agent trees (active in the last 24 h):" in lines
    assert lines[-1].split() == ["agent:main:main", "0.5000", "1200", "1.0000", "0.5000"]


def test_budgets_json_is_the_apis_view(clawbus: CliRunner) -> None:
    view = json.loads(run(clawbus, "budgets", "--json").stdout)
    assert [row["agentId"] for row in view["agents"]] == ["main", "research"]
    assert view["trees"] == []


def test_budgets_set_changes_the_runtime_budget_and_prints_the_agents_row(
    clawbus: CliRunner, api_store: Store
) -> None:
    out = run(clawbus, "budgets", "set", "research", "--daily-usd", "none", "--daily-tokens", "5000").stdout
    assert out.strip() == (
        "agent research  spent $ 0.0000  daily $ -  left $ -  tokens 0  daily tokens 5000  left tokens 5000"
        "  source runtime"
    )
    assert api_store.budgets.override("research") == Override(-1, 5000)
    row = json.loads(run(clawbus, "budgets", "set", "research", "--json").stdout)
    assert (row["dailyUsd"], row["source"]) == (2.0, "config")
    assert api_store.budgets.override("research") == Override()


def test_budgets_set_of_an_unknown_agent_fails_with_the_apis_message(clawbus: CliRunner) -> None:
    result = run(clawbus, "budgets", "set", "nobody", "--daily-usd", "1", code=1)
    assert "404 not_found: Agent not found: nobody" in result.stderr


def test_budgets_set_refuses_a_bad_value(clawbus: CliRunner) -> None:
    result = run(clawbus, "budgets", "set", "main", "--daily-tokens", "many", code=2)
    assert "--daily-tokens" in result.stderr


def test_the_client_sends_only_the_values_given(http: TestClient, api_store: Store) -> None:
    client: Client = client_through(http)
    row = client.set_budget("main", daily_tokens=None)
    assert (row.daily_tokens, row.daily_usd, row.source) == (None, 2.0, "runtime")
    assert api_store.budgets.override("main") == Override(None, -1)
    with pytest.raises(APIError) as refused:
        client.set_budget("main", daily_usd=-2)
    assert (refused.value.status, refused.value.field) == (400, "dailyUsd")


def test_status_prints_each_models_use_against_its_limits(clawbus: CliRunner, api_store: Store) -> None:
    limits = CallLimits(requests_per_minute=60, concurrent=2)
    admitted = api_store.traffic.admit(
        "fake/fast",
        "run-1",
        klass=0,
        flow="main|main",
        weight=1,
        limits=limits,
        tokens=70,
        hold_ms=60_000,
        grace_ms=5_000,
    )
    assert admitted.ticket is not None
    out = run(clawbus, "status").stdout
    assert "model:    fake/fast: 1/60 requests, 70 tokens in the last minute, 1/2 in flight, 0 waiting" in out


def test_status_says_when_cold_moves_are_failing(
    clawbus: CliRunner, api_store: Store, tmp_path: Path
) -> None:
    assert "cold:" not in run(clawbus, "status").stderr
    refused_move(api_store, tmp_path)
    out = run(clawbus, "status").stderr  # a warning, as the reaper's is
    assert re.search(
        r"cold:     moves failing for \d+s \(1 failed in all\), messages stay in Redis; last \d+s ago:", out
    )
    assert "NotADirectoryError" in out


def test_status_says_when_runs_are_stalled_and_which_the_longest(
    clawbus: CliRunner, api_store: Store, api_config: Config
) -> None:
    assert "stalled:" not in run(clawbus, "status").stderr
    found = stalled(api_store, api_config)
    out = run(clawbus, "status").stderr  # a warning, as the cold store's
    assert re.search(
        r"stalled:  1 run\(s\) renewing their lease with no progress \(1 stalls in all\); "
        rf"longest: {found.run_id} of agent:main:cron:stuck for 3[56]\d\ds \(owner task-stuck, attempt 1\)",
        out,
    )
