"""agents_list: its parameters and result (docs/contract.md §6).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from clawbus.shared.wire.models import Params, Wire


class AgentsListParams(Params):
    pass


class AgentRuntime(Wire):
    """What runs the agent, as the release says it: clawbus picks the runtime from the model's provider."""

    id: str = "auto"
    source: str = "implicit"


class AgentRow(Wire):
    id: str
    name: str | None = None
    configured: bool
    model: str | None = None
    agent_runtime: AgentRuntime | None = None


class AgentsListResult(Wire):
    requester: str
    allow_any: bool
    agents: list[AgentRow]
