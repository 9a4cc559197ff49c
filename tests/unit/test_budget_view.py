"""shared/domain/budget_view.py: an agent's budget in force is an owner's runtime values over the
configuration's (UNLIMITED lifting a limit), and what is left never goes below zero."""

from __future__ import annotations

import pytest

from clawbus.shared.domain.budget_view import agent_budget, effective, override_of, tree_budget
from clawbus.shared.domain.budgets import UNLIMITED, Limits, Override, Spend
from tests.conftest import make_config

CONFIGURED = Limits(daily_usd=2.0, daily_tokens=1_000)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (Override(), (2.0, 1_000, "config")),
        (Override(daily_usd_micros=500_000), (0.5, 1_000, "runtime")),
        (Override(daily_tokens=UNLIMITED), (2.0, None, "runtime")),
        (Override(UNLIMITED, 0), (None, 0, "runtime")),
    ],
)
def test_runtime_values_stand_over_the_configurations(
    override: Override, expected: tuple[object, ...]
) -> None:
    assert effective(CONFIGURED, override) == expected


def test_what_is_left_is_the_budget_less_the_spend_and_never_below_zero() -> None:
    config = make_config({"agents": {"defaults": {"budget": {"dailyUsd": 1.0, "dailyTokens": 100}}}})
    row = agent_budget(config, "main", Spend(usd_micros=1_500_000, tokens=40), Override())
    assert (row.spent_usd, row.left_usd, row.spent_tokens, row.left_tokens) == (1.5, 0.0, 40, 60)


def test_an_agent_without_a_budget_has_nothing_left_to_count() -> None:
    row = agent_budget(make_config(), "research", Spend(250_000, 9), Override())
    assert (row.daily_usd, row.left_usd, row.daily_tokens, row.left_tokens, row.source) == (
        None,
        None,
        None,
        None,
        "config",
    )


def test_a_tree_counts_against_max_tree_cost() -> None:
    config = make_config({"agents": {"defaults": {"subagents": {"maxTreeCostUsd": 0.5}}}})
    tree = tree_budget(config, "agent:main:main", Spend(100_000, 10))
    assert (tree.max_tree_cost_usd, tree.left_usd) == (0.5, 0.4)
    assert tree_budget(make_config(), "agent:main:main", Spend()).left_usd is None


def test_a_request_sets_given_numbers_lifts_given_nulls_and_leaves_the_rest_to_the_configuration() -> None:
    assert override_of(1.25, None, {"daily_usd"}) == Override(1_250_000, None)
    assert override_of(None, None, {"daily_usd", "daily_tokens"}) == Override(UNLIMITED, UNLIMITED)
    assert override_of(None, 0, {"daily_tokens"}) == Override(None, 0)
    assert override_of(None, None, set()) == Override()
