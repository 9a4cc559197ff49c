"""The session tools, one module each, all called the same way: ``tool.invoke(ctx, raw_args)``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.domain import subagents
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.tools.agents import agents_list
from clawbus.shared.tools.history import sessions_history
from clawbus.shared.tools.list import sessions_list
from clawbus.shared.tools.send import sessions_send
from clawbus.shared.tools.spawn import sessions_spawn
from clawbus.shared.tools.status import session_status
from clawbus.shared.tools.subagents import subagents as subagents_tool
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.tools.yielding import sessions_yield
from clawbus.shared.wire.agents_schema import AgentsListParams
from clawbus.shared.wire.history_schema import SessionsHistoryParams
from clawbus.shared.wire.list_schema import SessionsListParams
from clawbus.shared.wire.models import ToolFailure, Wire
from clawbus.shared.wire.send_schema import SessionsSendParams
from clawbus.shared.wire.spawn_schema import SessionsSpawnParams
from clawbus.shared.wire.subagents_schema import SessionStatusParams, SubagentsParams
from clawbus.shared.wire.yielding_schema import SessionsYieldParams

__all__ = ["TOOLS", "Tool", "ToolContext", "ToolError"]


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    params: type[BaseModel]
    run: Callable[[ToolContext, Any], Wire | AwaitRun]
    # The tool only reads: made again (an attempt that died after it ran and asks the model again), it
    # doubles nothing, so the loop state that follows it may be memoized after it rather than before.
    reads_only: bool = False

    def parse(self, args: Mapping[str, Any], ctx: ToolContext) -> BaseModel:
        """Validate raw arguments; raises pydantic.ValidationError naming the bad field."""
        limits = ctx.config.gateway.limits
        return self.params.model_validate(dict(args), context={"message_bytes": limits.message_bytes})

    def invoke(self, ctx: ToolContext, args: Mapping[str, Any]) -> Wire | AwaitRun:
        return self.run(dataclasses.replace(ctx, tool_names=tuple(TOOLS)), self.parse(args, ctx))

    def refusal(self, ctx: ToolContext) -> ToolFailure | None:
        """Sub-agent sessions get the sub-agent tool set (docs/contract.md §6). A leaf's sessions_spawn is
        left to the tool's own check, so its refusal carries the contract's text (check 4); an orchestrator's
        that tools.subagents.tools takes away is refused here like any other tool."""
        if not session_keys.is_subagent(ctx.caller_key):
            return None
        entry = ctx.store.sessions.get(ctx.caller_key)
        role = subagents.role_of(ctx.config, ctx.caller_key, entry)
        if self.name == "sessions_spawn" and role == "leaf":
            return None
        if self.name in subagents.tool_set(ctx.config, TOOLS, role):
            return None
        return ToolFailure(
            status="forbidden",
            error=f"{self.name} is not available in sub-agent sessions (tools.subagents.tools)",
        )


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool(
            "sessions_list",
            "List sessions, newest first, optionally with their last messages.",
            SessionsListParams,
            sessions_list,
            reads_only=True,
        ),
        Tool(
            "sessions_history",
            "Read one session's transcript.",
            SessionsHistoryParams,
            sessions_history,
            reads_only=True,
        ),
        Tool(
            "sessions_send",
            "Send a message into another session; optionally wait for its reply.",
            SessionsSendParams,
            sessions_send,
        ),
        Tool(
            "sessions_spawn",
            "Start a sub-agent in its own session; its result is announced back when it ends.",
            SessionsSpawnParams,
            sessions_spawn,
        ),
        Tool(
            "agents_list",
            "List the agents this session may spawn.",
            AgentsListParams,
            agents_list,
            reads_only=True,
        ),
        Tool(
            "sessions_yield",
            "End your turn now and wait for every sub-agent you spawned to report; you are woken once, "
            "with all their reports.",
            SessionsYieldParams,
            sessions_yield,
        ),
        Tool(
            "subagents",
            "Your sub-agents: list them (recursive: theirs too), kill one or all (with everything they "
            "spawned), steer a running one (your message reaches its next step), or get info on one.",
            SubagentsParams,
            subagents_tool,
        ),
        Tool(
            "session_status",
            "This session's status card (model, tokens, cost, runs, children pending, waiting or not); "
            "model sets its model.",
            SessionStatusParams,
            session_status,
        ),
    )
}
