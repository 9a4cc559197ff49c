"""``agents``: the agents, their defaults, sandboxing and sub-agent rules."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AliasChoices,
    BeforeValidator,
    Field,
    field_validator,
)

from clawbus.shared.base.session_keys import normalize_agent_id
from clawbus.shared.config.base import Section
from clawbus.shared.wire.models import ThinkingLevel


class ModelChoice(Section):
    """The release's model object: a ``primary`` ref and the ``fallbacks`` tried, in order, when it fails."""

    primary: str | None = None
    fallbacks: list[str] = []


# A model as the release writes it: ``"<provider>/<model>"`` or ``{primary, fallbacks}``.
ModelSpec = str | ModelChoice


def primary(spec: ModelSpec | None) -> str | None:
    return spec.primary if isinstance(spec, ModelChoice) else spec


def fallbacks(spec: ModelSpec | None) -> list[str]:
    return list(spec.fallbacks) if isinstance(spec, ModelChoice) else []


# The release's thinking levels clawbus has no level of its own for: the nearest it has (``adaptive``: the
# provider decides, so none is sent).
_THINKING_NEAREST: dict[str, ThinkingLevel | None] = {"xhigh": "high", "max": "high", "ultra": "high"}
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high")


def _thinking(value: Any) -> Any:
    if isinstance(value, str) and value not in THINKING_LEVELS:
        return _THINKING_NEAREST.get(value.strip().lower())
    return value


Thinking = Annotated[ThinkingLevel | None, BeforeValidator(_thinking)]


class SandboxConfig(Section):
    mode: Literal["off", "non-main", "all"] = "off"
    session_tools_visibility: Literal["spawned", "all"] = "spawned"


class SubagentDefaults(Section):
    """``agents.defaults.subagents``: how sub-agents are spawned, nest and run (an agent's own
    ``subagents`` overrides each of these but ``maxConcurrent``, which is the whole fleet's)."""

    run_timeout_seconds: int = Field(0, ge=0)
    archive_after_minutes: int = Field(60, ge=0)
    # How long the announce step may run once it has started; past it the report is posted from the
    # child's own outcome.
    announce_timeout_seconds: int = Field(60, ge=1)
    # How deep sub-agents nest: 1, sub-agents never spawn; 2, a sub-agent may spawn leaves; up to 5.
    max_spawn_depth: int = Field(5, ge=1, le=5)
    # Children of one session that have not ended yet.
    max_children_per_agent: int = Field(5, ge=1, le=20)
    # Sub-agent runs running at once across the whole fleet; the rest wait their turn, in order.
    max_concurrent: int = Field(8, ge=1)
    # The sub-agents' model and thinking when a spawn names none (else their agent's own).
    model: ModelSpec | None = None
    thinking: Thinking = None
    require_agent_id: bool = False
    # Agents a spawn may name besides the caller's own (``*``: any); an agent's own list wins.
    allow_agents: list[str] | None = None
    # What a root session's whole sub-agent tree (every depth) may spend on model calls, in USD.
    max_tree_cost_usd: float | None = Field(None, gt=0)


class Budget(Section):
    """What one agent may spend on model calls per UTC day; a value left out is not limited."""

    daily_usd: float | None = Field(None, gt=0)
    daily_tokens: int | None = Field(None, ge=1)


class AgentDefaults(Section):
    model: ModelSpec = "echo/echo"
    # The thinking level of a session that set none (the release's levels above high read as high).
    thinking_default: Thinking = None
    workspace: str | None = None
    sandbox: SandboxConfig = SandboxConfig()
    subagents: SubagentDefaults = SubagentDefaults()
    budget: Budget = Budget()


class AgentSubagents(Section):
    """An agent's own ``subagents``: each value left out is ``agents.defaults.subagents``'s."""

    allow_agents: list[str] | None = None
    max_spawn_depth: int | None = Field(None, ge=1, le=5)
    max_children_per_agent: int | None = Field(None, ge=1, le=20)
    run_timeout_seconds: int | None = Field(None, ge=0)
    archive_after_minutes: int | None = Field(None, ge=0)
    model: ModelSpec | None = None
    thinking: Thinking = None
    require_agent_id: bool | None = None


class AgentSandbox(Section):
    mode: Literal["off", "non-main", "all"] = "off"


class AgentSkill(Section):
    """What an agent is good at, as its A2A agent card lists it."""

    id: str = Field(min_length=1, max_length=128)
    name: str = Field(min_length=1, max_length=256)
    description: str = Field("", max_length=4096)
    tags: list[str] = []
    examples: list[str] = []


class AgentIdentity(Section):
    """The release's persona; clawbus takes its ``name`` as the agent's when ``name`` is not set."""

    name: str | None = None


class AgentConfig(Section):
    id: str
    name: str | None = None
    identity: AgentIdentity | None = None
    # What the agent does, for the people and agents that find it (its A2A agent card).
    description: str | None = Field(None, max_length=4096)
    skills: list[AgentSkill] = []
    # Which agent a message naming none goes to; the release retired the marker (one agent resolves
    # implicitly there), clawbus still reads it, else takes the first agent.
    default: bool = False
    model: ModelSpec | None = None
    thinking_default: Thinking = None
    workspace: str | None = None
    sandbox: AgentSandbox | None = None
    subagents: AgentSubagents = AgentSubagents()
    # Over ``agents.defaults.budget`` (each value left out is the default's).
    budget: Budget | None = None
    # This agent's weight in the share of model capacity when calls wait (docs/architecture.md).
    priority: int = Field(1, ge=1, le=100)

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return normalize_agent_id(value)

    @property
    def display_name(self) -> str | None:
        return self.name or (self.identity.name if self.identity else None)


def _keyed(value: Any) -> Any:
    """The release keys ``agents.entries`` by agent id; clawbus keeps the agents in order, ids inside."""
    if isinstance(value, dict):
        return [{"id": agent_id, **(spec or {})} for agent_id, spec in value.items()]
    return value


class AgentsConfig(Section):
    defaults: AgentDefaults = AgentDefaults()
    entries: Annotated[list[AgentConfig], BeforeValidator(_keyed)] = Field(
        [AgentConfig(id="main", default=True)],
        validation_alias=AliasChoices("entries", "list"),
        serialization_alias="entries",
    )

    @field_validator("entries")
    @classmethod
    def _unique_ids_one_default(cls, agents: list[AgentConfig]) -> list[AgentConfig]:
        if not agents:
            # The release takes an empty roster (its one implicit agent); so does clawbus: main.
            return [AgentConfig(id="main", default=True)]
        ids = [agent.id for agent in agents]
        duplicates = sorted({agent_id for agent_id in ids if ids.count(agent_id) > 1})
        if duplicates:
            raise ValueError(f"duplicate agent id: {', '.join(duplicates)}")
        if sum(agent.default for agent in agents) > 1:
            raise ValueError("more than one agent has default: true")
        return agents
