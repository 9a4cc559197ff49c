"""The wire shapes of the fleet's model traffic and budgets (``GET /v1/status``, ``GET /v1/budgets``,
``PUT /v1/agents/{agentId}/budget``): the client reads them too, so nothing here reaches the configuration
or the store (``shared.domain.budget_view`` and ``shared.domain.traffic_view`` fill them)."""

from __future__ import annotations

from typing import Literal

from clawbus_client import models as client
from pydantic import Field

from clawbus.shared.wire.models import FleetStatus, Wire

BudgetSource = Literal["config", "runtime"]


class AgentBudget(client.AgentBudget, Wire):
    """One agent's day: what it spent, its budget in force (None: not limited) and what is left of it."""

    # Always written (null: not limited), though a null is left out on the wire.
    daily_usd: float | None
    daily_tokens: int | None
    left_usd: float | None
    left_tokens: int | None
    source: BudgetSource


class TreeBudget(client.TreeBudget, Wire):
    """One sub-agent tree (its root session): what its sub-agents spent, against ``maxTreeCostUsd``."""

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


class BudgetsView(client.BudgetsView, Wire):
    """``GET /v1/budgets``: every agent's spend on ``day`` (UTC), and every tree active in the last day."""

    agents: list[AgentBudget]
    trees: list[TreeBudget]


class TrafficLimits(client.TrafficLimits, Wire):
    """Per minute and at once; None: not limited (or not learned)."""


class ModelTrafficRow(client.ModelTrafficRow, Wire):
    limits: TrafficLimits
    learned: TrafficLimits


class FleetView(FleetStatus, client.FleetView, Wire):
    """``GET /v1/status``: the fleet's figures and its model traffic."""

    models: list[ModelTrafficRow] = Field(default_factory=list)
