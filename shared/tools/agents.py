"""agents_list (docs/contract.md §6): which agents the caller may spawn, its own first."""

from __future__ import annotations

from clawbus.shared.domain import subagents
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.agents_schema import AgentRow, AgentRuntime, AgentsListParams, AgentsListResult


def agents_list(ctx: ToolContext, _params: AgentsListParams) -> AgentsListResult:
    config, requester = ctx.config, ctx.caller_agent
    allow_any, allowed = subagents.allowed_agents(config, requester)
    # Exactly the agents sessions_spawn accepts: an allow-listed id with no configured agent is refused
    # there, so it is not offered here.
    known = set(config.agent_ids())
    others = (
        sorted(known - {requester}) if allow_any else [a for a in allowed if a != requester and a in known]
    )
    rows = []
    for agent_id in [requester, *others]:
        agent = config.agent(agent_id)
        rows.append(
            AgentRow(
                id=agent_id,
                name=agent.display_name if agent else None,
                configured=agent is not None,
                model=config.model_of(agent_id),
                agent_runtime=AgentRuntime(),
            )
        )
    return AgentsListResult(requester=requester, allow_any=allow_any, agents=rows)
