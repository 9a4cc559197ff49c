"""Spend recorded as if calls had settled, for the tests that show or check budgets."""

from __future__ import annotations

from clawbus.shared.domain.budgets import day_of
from clawbus.shared.store import Store


def spend(store: Store, agent_id: str, usd_micros: int, tokens: int, root: str | None = None) -> None:
    """What ``agent_id``'s settled calls spent today (and ``root``'s tree), as the budget scripts keep it."""
    now = store.clock.now_ms()
    keys = store.keys
    store.redis.hset(
        keys.budget_spent(agent_id, day_of(now)), mapping={"usdMicros": usd_micros, "tokens": tokens}
    )
    if root:
        store.redis.hset(keys.tree_spent(root), mapping={"usdMicros": usd_micros, "tokens": tokens})
        store.redis.zadd(keys.trees_active(), {root: now})
