"""Budgets (owner tokens): ``GET /v1/budgets``, every agent's spend today and every sub-agent tree active
in the last day, each against its budget; ``GET /v1/chains/{chainId}``, a chain's spend against the chain
budget; ``PUT /v1/agents/{agentId}/budget``, an agent's budget at runtime, in force from the next model call
on every worker."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

from clawbus.api.auth import forbidden
from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse, not_found
from clawbus.shared.domain.budget_view import agent_budget, chain_budget, override_of, tree_budget
from clawbus.shared.domain.budgets import day_of
from clawbus.shared.wire.fleet import AgentBudget, BudgetsView, ChainBudget

router = APIRouter(tags=["budgets"])
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (401, 403)}
# Trees that spent in this long are listed, the latest first, at most TREES of them.
TREE_WINDOW_MS = 86_400_000
TREES = 200
# A runtime budget's largest values: micro-USD stay exact in Redis's numbers.
MAX_USD = 1_000_000_000.0
MAX_TOKENS = 10**15


def _whole_number(value: Any) -> Any:
    """JSON has one number type: ``5.0`` is the whole number 5 (JSON Schema's ``integer`` says so too),
    ``true`` and ``"5"`` are no amount."""
    if isinstance(value, bool | str):
        raise ValueError("must be a whole number")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class BudgetBody(BaseModel):
    """An agent's runtime budget: a number sets a value, ``null`` lifts the limit, a field left out is the
    configuration's. The whole runtime budget is replaced."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    # Strict: JSON true or "5" is no amount.
    daily_usd: float | None = Field(None, ge=0, le=MAX_USD, strict=True, allow_inf_nan=False)
    daily_tokens: Annotated[int | None, BeforeValidator(_whole_number)] = Field(None, ge=0, le=MAX_TOKENS)


AgentIdPath = Annotated[str, Path(min_length=1, max_length=128, description="A configured agent's id")]
ChainIdPath = Annotated[
    str,
    Path(min_length=1, max_length=128, description="A chain's id (a run's chainId: the run it began with)"),
]


@router.get("/v1/budgets", response_model=BudgetsView, responses=_errors)
def budgets(services: ServicesDep, principal: PrincipalDep) -> BudgetsView:
    if not principal.owner:
        raise forbidden("budgets need an owner token")
    config, store = services.config, services.store
    now = store.clock.now_ms()
    day = day_of(now)
    agent_ids = config.agent_ids()
    spent = store.budgets.spent(agent_ids, day)
    agents = [
        agent_budget(config, agent_id, spent[agent_id], store.budgets.override(agent_id))
        for agent_id in agent_ids
    ]
    trees = store.budgets.trees(now - TREE_WINDOW_MS, TREES)
    return BudgetsView(
        day=day, agents=agents, trees=[tree_budget(config, root, spend) for root, spend in trees.items()]
    )


@router.get(
    "/v1/chains/{chain_id}", response_model=ChainBudget, responses={**_errors, 400: {"model": ErrorResponse}}
)
def chain(chain_id: ChainIdPath, services: ServicesDep, principal: PrincipalDep) -> ChainBudget:
    """A chain's spend is counted while a chain budget is set (``maxChainCostUsd``, ``maxChainTokens``):
    with none, it reads 0 and no key is kept per chain."""
    if not principal.owner:
        raise forbidden("budgets need an owner token")
    return chain_budget(services.config, chain_id, services.store.budgets.chain(chain_id))


@router.put(
    "/v1/agents/{agent_id}/budget",
    response_model=AgentBudget,
    responses={**_errors, **{code: {"model": ErrorResponse} for code in (400, 404)}},
)
def set_budget(
    agent_id: AgentIdPath, body: BudgetBody, services: ServicesDep, principal: PrincipalDep
) -> AgentBudget:
    if not principal.owner:
        raise forbidden("changing a budget needs an owner token")
    config, store = services.config, services.store
    if config.agent(agent_id) is None:
        raise not_found(f"Agent not found: {agent_id}")
    store.budgets.set_override(
        agent_id, override_of(body.daily_usd, body.daily_tokens, body.model_fields_set)
    )
    day = day_of(store.clock.now_ms())
    spent = store.budgets.spent([agent_id], day)[agent_id]
    return agent_budget(config, agent_id, spent, store.budgets.override(agent_id))
