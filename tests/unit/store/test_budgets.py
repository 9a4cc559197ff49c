"""shared/store/budgets.py and its scripts: reservations against an agent's day, a tree and a chain, their
settling, holds a dead worker left, runtime budgets."""

from __future__ import annotations

from clawbus.shared.domain.budgets import UNLIMITED, Limits, Override, Refusal, Spend
from clawbus.shared.store import Store

DAY = "2026-11-27"
NOW = 1_700_000_000_000


def reserve(
    store: Store,
    hold: str,
    *,
    usd: int = 0,
    tokens: int = 0,
    limits: Limits = Limits(),
    root: str | None = None,
    chain: str | None = None,
    now: int = NOW,
) -> Refusal | None:
    return store.budgets.reserve(
        "main",
        DAY,
        root,
        limits,
        usd_micros=usd,
        tokens=tokens,
        now_ms=now,
        hold=hold,
        hold_ms=10_000,
        chain=chain,
    )


def test_a_reservation_counts_until_settled_to_what_was_spent(store: Store) -> None:
    assert reserve(store, "h1", usd=500, tokens=100) is None
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(500, 100)
    store.budgets.settle("main", DAY, None, "h1", usd_micros=120, tokens=30)
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(120, 30)


def test_a_reservation_that_would_pass_the_day_is_refused_with_what_was_spent(store: Store) -> None:
    limits = Limits(daily_usd=0.001)
    assert reserve(store, "h1", usd=600, limits=limits) is None
    refused = reserve(store, "h2", usd=600, limits=limits)
    assert refused == Refusal("dailyUsd", 0.0006, 0.001)
    assert refused.message() == "budget exceeded: dailyUsd (0.0006 of 0.0010 USD)"


def test_an_unpriced_call_counts_against_tokens_only(store: Store) -> None:
    limits = Limits(daily_usd=0.000001, daily_tokens=100)
    assert reserve(store, "h1", usd=0, tokens=60, limits=limits) is None
    assert reserve(store, "h2", usd=0, tokens=60, limits=limits) == Refusal("dailyTokens", 60, 100)


def test_a_tree_is_counted_whole_and_stops_at_its_limit(store: Store) -> None:
    limits = Limits(tree_usd=0.001)
    assert reserve(store, "h1", usd=700, limits=limits, root="agent:main:main") is None
    assert reserve(store, "h2", usd=700, limits=limits, root="agent:main:main") == Refusal(
        "maxTreeCostUsd", 0.0007, 0.001
    )
    assert reserve(store, "h3", usd=700, limits=limits, root="agent:main:other") is None
    assert set(store.budgets.trees(0)) == {"agent:main:main", "agent:main:other"}


def test_a_chain_is_counted_whole_and_stops_at_its_limits(store: Store) -> None:
    limits = Limits(chain_usd=0.001, chain_tokens=1_000)
    assert reserve(store, "h1", usd=700, tokens=100, limits=limits, chain="c1") is None
    assert reserve(store, "h2", usd=700, tokens=100, limits=limits, chain="c1") == Refusal(
        "maxChainCostUsd", 0.0007, 0.001
    )
    assert reserve(store, "h3", usd=0, tokens=950, limits=limits, chain="c1") == Refusal(
        "maxChainTokens", 100, 1_000
    )
    assert reserve(store, "h4", usd=700, tokens=100, limits=limits, chain="c2") is None  # another chain
    store.budgets.settle("main", DAY, None, "h1", usd_micros=300, tokens=40, chain="c1")
    assert store.budgets.chain("c1") == Spend(300, 40)
    refused = reserve(store, "h5", usd=0, tokens=961, limits=limits, chain="c1")
    assert refused is not None
    assert refused.message() == "budget exceeded: maxChainTokens (40 of 1000 tokens)"


def test_the_hold_of_a_worker_that_died_is_given_back_once_it_lapses(store: Store) -> None:
    reserve(store, "dead", usd=900, tokens=900, root="agent:main:main", chain="c1")
    reserve(store, "later", usd=100, tokens=10, now=NOW + 11_000)
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(100, 10)
    assert store.budgets.tree("agent:main:main") == Spend(0, 0)
    assert store.budgets.chain("c1") == Spend(0, 0)
    store.budgets.settle(
        "main", DAY, "agent:main:main", "dead", usd_micros=50, tokens=5
    )  # it ended after all
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(150, 15)


def test_a_runtime_budget_stands_over_the_configured_one_until_replaced(store: Store) -> None:
    store.budgets.set_override("main", Override(daily_usd_micros=1_000, daily_tokens=UNLIMITED))
    assert store.budgets.override("main") == Override(1_000, UNLIMITED)
    assert reserve(store, "h1", usd=2_000, limits=Limits(daily_usd=5)) is not None
    store.budgets.set_override("main", Override())
    assert reserve(store, "h2", usd=2_000, limits=Limits(daily_usd=5)) is None
