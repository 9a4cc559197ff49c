"""The wire shapes of the fleet's model traffic and budgets (``GET /v1/status``, ``GET /v1/budgets``,
``PUT /v1/agents/{agentId}/budget``): the client reads them too, so nothing here reaches the configuration
or the store (``shared.domain.budget_view`` and ``shared.domain.traffic_view`` fill them)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from clawbus.shared.wire.models import FleetStatus, Wire

BudgetSource = Literal["config", "runtime"]


class AgentBudget(Wire):
    """One agent's day: what it spent, its budget in force (None: not limited) and what is left of it."""

    agent_id: str
    spent_usd: float
    spent_tokens: int
    daily_usd: float | None
    daily_tokens: int | None
    left_usd: float | None
    left_tokens: int | None
    # ``runtime``: an owner set a value at runtime (the other may still be the configuration's).
    source: BudgetSource


class TreeBudget(Wire):
    """One sub-agent tree (its root session): what its sub-agents spent, against ``maxTreeCostUsd``."""

    root_key: str
    spent_usd: float
    spent_tokens: int
    max_tree_cost_usd: float | None
    left_usd: float | None


class ChainBudget(Wire):
    """One chain of agent work (docs/contract.md §4, "Chains"): what its runs spent, against the chain
    budget, and the guards it runs under."""

    chain_id: str
    spent_usd: float
    spent_tokens: int
    max_chain_cost_usd: float | None
    max_chain_tokens: int | None
    max_hops: int
    max_cycles: int


class BudgetsView(Wire):
    """``GET /v1/budgets``: every agent's spend on ``day`` (UTC), and every tree active in the last day."""

    day: str
    agents: list[AgentBudget]
    trees: list[TreeBudget]


class TrafficLimits(Wire):
    """Per minute and at once; None: not limited (or not learned)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None


class ModelTrafficRow(Wire):
    model: str  # ``<provider>/<model>``
    provider: str
    model_id: str
    limits: TrafficLimits
    learned: TrafficLimits
    # Calls started in the last minute and their tokens, calls under way, calls waiting for capacity.
    requests_in_window: int = 0
    tokens_in_window: int = 0
    in_flight: int = 0
    waiting: int = 0
    # What is left of the model's cooldown after a 429 (0: none).
    cooldown_ms: int = 0


class FleetView(FleetStatus):
    """``GET /v1/status``: the fleet's figures and its model traffic."""

    models: list[ModelTrafficRow] = Field(default_factory=list)
