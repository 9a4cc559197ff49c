"""subagents and session_status: their parameters and results (docs/contract.md, "Orchestration").

Kept apart from the tools' code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from shared.models import MessageText, Params, QueueMode, SessionRef, SpawnRole, Wire

ChildStatus = Literal["queued", "running", "waiting", "done", "error", "timeout", "killed"]


class SubagentsParams(Params):
    action: Literal["list", "kill", "steer", "info"] = Field(
        description="list your sub-agents; kill one (or all) with its whole subtree; steer a running one; "
        "info on one."
    )
    recursive: bool = Field(False, description="list: their sub-agents too, to the last level.")
    target: SessionRef | None = Field(
        None, description='kill, steer, info: a child session key or label; kill also takes "all".'
    )
    message: MessageText | None = Field(None, description="steer: what to tell the sub-agent.")

    @model_validator(mode="after")
    def _needs(self) -> SubagentsParams:
        if self.action != "list" and self.target is None:
            raise ValueError(f"target: required for {self.action}")
        if self.action == "steer" and self.message is None:
            raise ValueError("message: required for steer")
        return self


class SubagentRow(Wire):
    key: str
    label: str | None = None
    agent_id: str
    depth: int
    role: SpawnRole | None = None
    spawned_by: str
    status: ChildStatus
    runtime_ms: int
    total_tokens: int | None = None
    estimated_cost_usd: float | None = None
    # Its report to its spawner is still to come.
    pending_report: bool
    # While it waits (sessions_yield): the children it still waits for.
    waiting_for: int | None = None


class SubagentsList(Wire):
    action: Literal["list"] = "list"
    count: int
    subagents: list[SubagentRow]


class SubagentsKilled(Wire):
    action: Literal["kill"] = "kill"
    # The sessions stopped, the targets first, then what they spawned; each reports once, Status: killed.
    killed: list[str]


class SubagentSteered(Wire):
    action: Literal["steer"] = "steer"
    target: str
    run_id: str
    # ``next_step``: the running sub-agent takes the message in at its next model step; ``new_run``: it was
    # not running, so the message starts a run of its own.
    delivered: Literal["next_step", "new_run"]


class SubagentInfo(Wire):
    action: Literal["info"] = "info"
    subagent: SubagentRow
    created_at: int
    updated_at: int
    last_run_id: str | None = None
    last_run_status: str | None = None
    last_error: str | None = None


class SessionStatusParams(Params):
    model: str | None = Field(
        None, max_length=256, description="Set this session's model (a configured <provider>/<model>)."
    )


class SessionStatusCard(Wire):
    session_key: str
    agent_id: str
    model: str
    # The session's own model, when it overrides its agent's.
    model_override: str | None = None
    thinking: str | None = None
    total_tokens: int | None = None
    estimated_cost_usd: float | None = None
    runs_queued: int
    runs_running: int
    # What a message arriving now (on the session's last channel) does while the session is busy, and
    # whether that is the session's own mode or the configuration's (docs/contract.md §11).
    queue_mode: QueueMode
    queue_mode_source: Literal["session", "channel", "default"]
    children_pending: int
    # ``waiting for N children`` while it yields; else what its latest run did.
    state: str
    last_run_status: str | None = None
    spawn_depth: int
    role: SpawnRole | None = None
