"""``tools``: session-tool visibility, agent-to-agent access, sub-agent tools, spawn attachments."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
)

from clawbus.shared.config.base import Section

VISIBILITIES = ("self", "tree", "agent", "all")
Visibility = Literal["self", "tree", "agent", "all"]


# --- tools ---------------------------------------------------------------------------------------------


def _visibility(value: Any) -> Any:
    """docs/contract.md §7: case-insensitive, anything unknown falls back to ``tree``."""
    normalized = str(value).strip().lower()
    return normalized if normalized in VISIBILITIES else "tree"


class SessionsToolConfig(Section):
    visibility: Annotated[Visibility, BeforeValidator(_visibility)] = "tree"


class AgentToAgentToolConfig(Section):
    enabled: bool = False
    allow: list[str] = []


class ToolFilter(Section):
    allow: list[str] | None = None
    also_allow: list[str] | None = None
    deny: list[str] | None = None


class SubagentToolsConfig(Section):
    tools: ToolFilter = ToolFilter()


class AttachmentsConfig(Section):
    enabled: bool = False
    max_files: int = Field(50, ge=0)
    max_file_bytes: int = Field(1024 * 1024, ge=0)
    max_total_bytes: int = Field(5 * 1024 * 1024, ge=0)
    retain_on_session_keep: bool = False


class SessionsSpawnToolConfig(Section):
    attachments: AttachmentsConfig = AttachmentsConfig()


class ToolsConfig(Section):
    sessions: SessionsToolConfig = SessionsToolConfig()
    agent_to_agent: AgentToAgentToolConfig = AgentToAgentToolConfig()
    subagents: SubagentToolsConfig = SubagentToolsConfig()
    sessions_spawn: SessionsSpawnToolConfig = Field(SessionsSpawnToolConfig(), alias="sessions_spawn")
