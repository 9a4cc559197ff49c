"""agents_list: its parameters and result (docs/contract.md §6).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from shared.models import Params, Wire


class AgentsListParams(Params):
    pass


class AgentRow(Wire):
    id: str
    name: str | None = None
    configured: bool


class AgentsListResult(Wire):
    requester: str
    allow_any: bool
    agents: list[AgentRow]
