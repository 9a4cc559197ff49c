"""Budgets in Redis: each agent's spend per UTC day, each sub-agent tree's, and the budgets owners set at
runtime; a call's worst case is reserved before it starts (one script) and settled after."""

from __future__ import annotations

from typing import Any

from redis import Redis

from clawbus.shared.domain.budgets import (
    DAY_TTL_SECONDS,
    MICROS,
    TOKEN_LIMITS,
    UNLIMITED,
    Charge,
    Limits,
    Override,
    Refusal,
    Reservation,
    Spend,
    micros,
)
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import ScriptCall, Scripts


class BudgetStore:
    def __init__(self, client: Redis, keys: RedisKeys, scripts: Scripts) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts

    def reserve(
        self,
        agent_id: str,
        day: str,
        root: str | None,
        limits: Limits,
        *,
        usd_micros: int,
        tokens: int,
        now_ms: int,
        hold: str,
        hold_ms: int,
        chain: str | None = None,
    ) -> Refusal | None:
        reservation = Reservation(agent_id, day, root, limits, usd_micros, tokens, now_ms, hold_ms, chain)
        script, keys, args = self.reserve_call(reservation, hold)
        return refusal(script(keys=keys, args=args))

    def reserve_call(self, reservation: Reservation, hold: str, if_in_flight: str = "") -> ScriptCall:
        """The reservation script's call; ``if_in_flight``: the key of calls in flight where ``hold`` must
        be (its admission, sent just before in the same round trip, admitted it), else nothing is held."""
        k, limits, root, chain = self._keys, reservation.limits, reservation.root, reservation.chain
        keys = [
            k.budget_spent(reservation.agent_id, reservation.day),
            k.budget_override(reservation.agent_id),
            k.tree_spent(root or "-"),
            k.trees_active(),
            k.budget_holds(),
            k.budget_hold_amounts(),
            k.chain_spent(chain or "-"),
        ]
        args = [
            UNLIMITED if limits.daily_usd is None else micros(limits.daily_usd),
            UNLIMITED if limits.daily_tokens is None else limits.daily_tokens,
            UNLIMITED if limits.tree_usd is None else micros(limits.tree_usd),
            reservation.usd_micros,
            reservation.tokens,
            DAY_TTL_SECONDS,
            reservation.now_ms,
            root or "",
            hold,
            reservation.now_ms + reservation.hold_ms,
            if_in_flight,
            chain or "",
            UNLIMITED if limits.chain_usd is None else micros(limits.chain_usd),
            UNLIMITED if limits.chain_tokens is None else limits.chain_tokens,
        ]
        return self._scripts.reserve_budget, keys, args

    def settle(
        self,
        agent_id: str,
        day: str,
        root: str | None,
        hold: str,
        *,
        usd_micros: int,
        tokens: int,
        chain: str | None = None,
    ) -> None:
        script, keys, args = self.settle_call(Charge(agent_id, day, root, usd_micros, tokens, chain), hold)
        script(keys=keys, args=args)

    def settle_call(self, charge: Charge, hold: str) -> ScriptCall:
        k = self._keys
        return (
            self._scripts.settle_budget,
            [k.budget_holds(), k.budget_hold_amounts()],
            [
                hold,
                charge.usd_micros,
                charge.tokens,
                k.budget_spent(charge.agent_id, charge.day),
                k.tree_spent(charge.root) if charge.root else "",
                k.chain_spent(charge.chain) if charge.chain else "",
            ],
        )

    def spent(self, agent_ids: list[str], day: str) -> dict[str, Spend]:
        pipe = self._redis.pipeline(transaction=False)
        for agent_id in agent_ids:
            pipe.hmget(self._keys.budget_spent(agent_id, day), "usdMicros", "tokens")
        return {agent_id: _spend(values) for agent_id, values in zip(agent_ids, pipe.execute(), strict=True)}

    def chain(self, chain_id: str) -> Spend:
        return _spend(self._redis.hmget(self._keys.chain_spent(chain_id), "usdMicros", "tokens"))

    def tree(self, root: str) -> Spend:
        return _spend(self._redis.hmget(self._keys.tree_spent(root), "usdMicros", "tokens"))

    def trees(self, since_ms: int, limit: int = 100) -> dict[str, Spend]:
        """Trees that spent since ``since_ms``, latest first."""
        k = self._keys
        roots = self._redis.zrevrangebyscore(k.trees_active(), "+inf", since_ms, start=0, num=limit)
        pipe = self._redis.pipeline(transaction=False)
        for root in roots:
            pipe.hmget(k.tree_spent(root), "usdMicros", "tokens")
        return {
            root: _spend(values) for root, values in zip(roots, pipe.execute() if roots else [], strict=True)
        }

    def override(self, agent_id: str) -> Override:
        values = self._redis.hmget(self._keys.budget_override(agent_id), "dailyUsdMicros", "dailyTokens")
        return Override(*(int(value) if value is not None else None for value in values))

    def set_override(self, agent_id: str, override: Override) -> None:
        """Replace ``agent_id``'s runtime budget; every worker's next call reads it."""
        key = self._keys.budget_override(agent_id)
        fields = {"dailyUsdMicros": override.daily_usd_micros, "dailyTokens": override.daily_tokens}
        pipe = self._redis.pipeline(transaction=True)
        pipe.delete(key)
        present = {name: value for name, value in fields.items() if value is not None}
        if present:
            pipe.hset(key, mapping=present)
        pipe.execute()


def refusal(answer: list[Any]) -> Refusal | None:
    """The reservation script's answer: None if it held the call (or, sent beside an admission that did
    not admit it, held nothing), else the budget the call would pass."""
    if answer[0] != "over":
        return None
    which, spent, limit = str(answer[1]), float(answer[2]), float(answer[3])
    if which not in TOKEN_LIMITS:
        spent, limit = spent / MICROS, limit / MICROS
    return Refusal(which, spent, limit)


def _spend(values: list[str | None]) -> Spend:
    return Spend(int(values[0] or 0), int(values[1] or 0))
