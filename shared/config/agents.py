"""``agents``: the agents, their defaults, sandboxing and sub-agent rules."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    field_validator,
)

from shared.config.base import Section
from shared.session_keys import normalize_agent_id

# --- agents --------------------------------------------------------------------------------------------


class SandboxConfig(Section):
    mode: Literal["off", "non-main", "all"] = "off"
    session_tools_visibility: Literal["spawned", "all"] = "spawned"


class SubagentDefaults(Section):
    run_timeout_seconds: int = Field(0, ge=0)
    archive_after_minutes: int = Field(60, ge=0)
    # How long the announce step may run once it has started; past it the report is posted from the
    # child's own outcome.
    announce_timeout_seconds: int = Field(60, ge=1)


class AgentDefaults(Section):
    model: str = "echo/echo"
    workspace: str | None = None
    sandbox: SandboxConfig = SandboxConfig()
    subagents: SubagentDefaults = SubagentDefaults()


class AgentSubagents(Section):
    allow_agents: list[str] = []


class AgentSandbox(Section):
    mode: Literal["off", "non-main", "all"] = "off"


class AgentConfig(Section):
    id: str
    name: str | None = None
    default: bool = False
    model: str | None = None
    workspace: str | None = None
    sandbox: AgentSandbox | None = None
    subagents: AgentSubagents = AgentSubagents()

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        return normalize_agent_id(value)


class AgentsConfig(Section):
    defaults: AgentDefaults = AgentDefaults()
    entries: list[AgentConfig] = Field([AgentConfig(id="main", default=True)], alias="list")

    @field_validator("entries")
    @classmethod
    def _unique_ids_one_default(cls, agents: list[AgentConfig]) -> list[AgentConfig]:
        if not agents:
            raise ValueError("at least one agent must be configured")
        ids = [agent.id for agent in agents]
        duplicates = sorted({agent_id for agent_id in ids if ids.count(agent_id) > 1})
        if duplicates:
            raise ValueError(f"duplicate agent id: {', '.join(duplicates)}")
        if sum(agent.default for agent in agents) > 1:
            raise ValueError("more than one agent has default: true")
        return agents
