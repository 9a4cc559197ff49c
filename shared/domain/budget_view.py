"""What an agent's budget is now and what is left of it: the configuration's budget under an owner's runtime
one (``PUT /v1/agents/{agentId}/budget``), as ``GET /v1/budgets``, ``clawbus budgets``, session_status and
the metrics show it. Pure: the callers read the spend and the runtime budget from the store."""

from __future__ import annotations

from clawbus.shared.config import Config
from clawbus.shared.domain.budgets import UNLIMITED, Limits, Override, Spend, configured, micros, usd
from clawbus.shared.wire.fleet import AgentBudget, BudgetSource, ChainBudget, TreeBudget


def effective(configured: Limits, override: Override) -> tuple[float | None, int | None, BudgetSource]:
    """The day's USD and token limits in force (None: none) and where they come from: each runtime value
    over the configuration's, ``UNLIMITED`` lifting the limit, as the reservation script reads them."""
    daily_usd = configured.daily_usd
    daily_tokens = configured.daily_tokens
    if override.daily_usd_micros is not None:
        daily_usd = None if override.daily_usd_micros == UNLIMITED else usd(override.daily_usd_micros)
    if override.daily_tokens is not None:
        daily_tokens = None if override.daily_tokens == UNLIMITED else override.daily_tokens
    runtime = override.daily_usd_micros is not None or override.daily_tokens is not None
    return daily_usd, daily_tokens, "runtime" if runtime else "config"


def agent_budget(config: Config, agent_id: str, spent: Spend, override: Override) -> AgentBudget:
    daily_usd, daily_tokens, source = effective(configured(config, agent_id), override)
    spent_usd = usd(spent.usd_micros)
    return AgentBudget(
        agent_id=agent_id,
        spent_usd=spent_usd,
        spent_tokens=spent.tokens,
        daily_usd=daily_usd,
        daily_tokens=daily_tokens,
        left_usd=None if daily_usd is None else usd(max(micros(daily_usd) - spent.usd_micros, 0)),
        left_tokens=None if daily_tokens is None else max(daily_tokens - spent.tokens, 0),
        source=source,
    )


def tree_budget(config: Config, root_key: str, spent: Spend) -> TreeBudget:
    limit = config.agents.defaults.subagents.max_tree_cost_usd
    return TreeBudget(
        root_key=root_key,
        spent_usd=usd(spent.usd_micros),
        spent_tokens=spent.tokens,
        max_tree_cost_usd=limit,
        left_usd=None if limit is None else usd(max(micros(limit) - spent.usd_micros, 0)),
    )


def chain_budget(config: Config, chain_id: str, spent: Spend) -> ChainBudget:
    chains = config.session.agent_to_agent
    return ChainBudget(
        chain_id=chain_id,
        spent_usd=usd(spent.usd_micros),
        spent_tokens=spent.tokens,
        max_chain_cost_usd=chains.max_chain_cost_usd,
        max_chain_tokens=chains.max_chain_tokens,
        max_hops=chains.max_hops,
        max_cycles=chains.max_cycles,
    )


def override_of(daily_usd: float | None, daily_tokens: int | None, given: set[str]) -> Override:
    """An owner's runtime budget from a request: a field ``given`` as a number sets it, given as None lifts
    the limit, left out falls back to the configuration."""

    def value(name: str, number: int | None) -> int | None:
        if name not in given:
            return None
        return UNLIMITED if number is None else number

    return Override(
        daily_usd_micros=value("daily_usd", None if daily_usd is None else micros(daily_usd)),
        daily_tokens=value("daily_tokens", daily_tokens),
    )
