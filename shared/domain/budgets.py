"""Budgets: what an agent may spend on model calls per UTC day, a root session's sub-agent tree in all, and
a chain of agent work in all (docs/architecture.md, "Budgets"). Amounts are kept in micro-USD, whole
numbers Redis can add."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import Config

MICROS = 1_000_000
# A day's spend is kept a day past its end, for the operator who looks at yesterday.
DAY_TTL_SECONDS = 2 * 86_400
# An owner's runtime budget value that lifts the limit.
UNLIMITED = -1
# The limits counted in tokens (the rest are USD).
TOKEN_LIMITS = frozenset({"dailyTokens", "maxChainTokens"})


@dataclass(frozen=True, slots=True)
class Limits:
    """An agent's day (None: not limited), its trees' (the fleet's ``maxTreeCostUsd``) and its chains' (the
    fleet's ``maxChainCostUsd``, ``maxChainTokens``)."""

    daily_usd: float | None = None
    daily_tokens: int | None = None
    tree_usd: float | None = None
    chain_usd: float | None = None
    chain_tokens: int | None = None

    @property
    def any(self) -> bool:
        return self.chained or any(
            limit is not None for limit in (self.daily_usd, self.daily_tokens, self.tree_usd)
        )

    @property
    def chained(self) -> bool:
        return self.chain_usd is not None or self.chain_tokens is not None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call that would pass ``which`` (``dailyUsd``, ``dailyTokens``, ``maxTreeCostUsd``,
    ``maxChainCostUsd``, ``maxChainTokens``)."""

    which: str
    spent: float
    limit: float

    def message(self) -> str:
        if self.which in TOKEN_LIMITS:
            return f"budget exceeded: {self.which} ({self.spent:g} of {self.limit:g} tokens)"
        return f"budget exceeded: {self.which} ({self.spent:.4f} of {self.limit:.4f} USD)"


@dataclass(frozen=True, slots=True)
class Spend:
    usd_micros: int = 0
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class Reservation:
    """A call's worst case (``usd_micros``, ``tokens``), held against ``agent_id``'s ``day``, for a
    sub-agent's call its tree under ``root``, and, when chains are limited, its ``chain``, within
    ``limits``; the hold lapses ``hold_ms`` after ``now_ms`` unless the call settles it."""

    agent_id: str
    day: str
    root: str | None
    limits: Limits
    usd_micros: int
    tokens: int
    now_ms: int
    hold_ms: int
    chain: str | None = None


@dataclass(frozen=True, slots=True)
class Charge:
    """What a settled call spent, charged to ``agent_id``'s ``day``, to the tree under ``root`` and to its
    ``chain``."""

    agent_id: str
    day: str
    root: str | None
    usd_micros: int
    tokens: int
    chain: str | None = None


@dataclass(frozen=True, slots=True)
class Override:
    """An owner's runtime budget; a field None is the configuration's, UNLIMITED none at all."""

    daily_usd_micros: int | None = None
    daily_tokens: int | None = None


class BudgetExceeded(ClawbusError):
    """A model call was not made: it would have passed a budget. The run ends in error with the message."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message())
        self.refusal = refusal


def configured(config: Config, agent_id: str) -> Limits:
    """The configuration's budget of ``agent_id``: its own values over ``agents.defaults.budget``."""
    default = config.agents.defaults.budget
    agent = config.agent(agent_id)
    own = agent.budget if agent is not None else None
    chains = config.session.agent_to_agent
    return Limits(
        daily_usd=(own.daily_usd if own and own.daily_usd is not None else default.daily_usd),
        daily_tokens=(own.daily_tokens if own and own.daily_tokens is not None else default.daily_tokens),
        tree_usd=config.agents.defaults.subagents.max_tree_cost_usd,
        chain_usd=chains.max_chain_cost_usd,
        chain_tokens=chains.max_chain_tokens,
    )


def day_of(now_ms: int) -> str:
    """The UTC day a budget counts in."""
    return _day_named(now_ms // 86_400_000)


@functools.lru_cache(maxsize=4)
def _day_named(day: int) -> str:
    # Asked twice for every model call: formatting the date each time was a hundredth of a step's CPU.
    return datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m-%d")


def micros(usd: float) -> int:
    """Reservations round up: a budget is never passed by more than rounding."""
    return math.ceil(usd * MICROS)


def usd(micro_usd: int | float) -> float:
    return micro_usd / MICROS
