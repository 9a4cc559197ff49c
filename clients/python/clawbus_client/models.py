"""The API's answers, as a client reads them: camelCase on the wire, snake_case here.

Read leniently: a field a newer server adds is kept (``model_extra``) and a value the client does not know
yet is taken as a string, so an older client keeps working against a newer server. Which fields exist and
what they mean: the server's OpenAPI document (``/openapi.json``) and docs/contract.md;
tests/unit/client/test_models.py checks these against the server's own models.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def wire(self) -> dict[str, Any]:
        """The JSON shape the server sent: camelCase, absent fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    ABORTED = "aborted"

    @property
    def terminal(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


# --- tool results --------------------------------------------------------------------------------------


class ToolFailure(Model):
    """A tool's refusal: ``status`` ``error`` or ``forbidden``, ``error`` says why."""

    status: str
    error: str
    run_id: str | None = None
    session_key: str | None = None
    role: str | None = None
    guard: str | None = None
    path: list[str] | None = None


class AnnounceDelivery(Model):
    status: str
    mode: str = "announce"


class SendResult(Model):
    """``sessions_send``'s result (an inbound message's too): ``accepted``, ``ok`` with its reply, ..."""

    run_id: str
    status: str
    session_key: str
    target_disposition: str | None = None
    delivery: AnnounceDelivery | None = None
    reply: str | None = None
    message: str | None = None
    error: str | None = None
    sent_before_error: bool | None = None
    flow_id: str | None = None
    note: str | None = None
    # Asked for with ``watch: true``: whether the caller now watches the target.
    watched: bool | None = None


class NotifyResult(Model):
    """``sessions_send`` with ``mode="notify"``: the message is queued as context for the target's next
    turn, starting none. ``notification_id``: the note run that records it (``get_run``)."""

    session_key: str
    notification_id: str
    status: str = "queued"
    durability: str = "durable"
    run_started: bool = False


class SpawnResult(Model):
    """``sessions_spawn``'s result: the child's session and first run; its report comes back when it ends."""

    child_session_key: str
    run_id: str
    mode: str
    status: str = "accepted"
    expects_completion_message: bool = True
    completion_target: str | None = None
    context: str = "isolated"
    task_name: str | None = None
    note: str | None = None
    resolved_model: str | None = None
    resolved_provider: str | None = None
    model_applied: bool | None = None
    attachments: dict[str, Any] | None = None
    warning: str | None = None


class CommandReply(Model):
    """A chat command's answer (``/status``, ``/reset``...), where an inbound message was one."""

    command: str
    status: str
    session_key: str
    reply: str | None = None
    error: str | None = None
    aborted: list[str] | None = None
    killed: list[str] | None = None


class Usage(Model):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class Run(Model):
    """One agent turn in one session; terminal states never change."""

    run_id: str
    session_key: str
    agent_id: str
    kind: str
    status: RunStatus
    seq: int
    created_at: int
    flow_id: str | None = None
    parent_run_id: str | None = None
    turn: int | None = None
    context: str | None = None
    chain_id: str | None = None
    hops: int = 0
    chain_path: list[str] | None = None
    timeout_ms: int | None = None
    trace_parent: str | None = None
    trace_id: str | None = None
    # An OpenAI-compatible request's token cap and sampling (maxTokens, temperature, topP, ...).
    sampling: dict[str, Any] | None = None
    started_at: int | None = None
    ended_at: int | None = None
    reply: str | None = None
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 0
    interrupted: int = 0
    cancel_requested: bool = False
    cancel_reason: str | None = None
    steered_into: str | None = None
    waiting_for: str | None = None


class FlowStep(Model):
    step: str
    turn: int | None = None
    run_id: str | None = None
    session_key: str | None = None
    status: str | None = None
    reply: str | None = None


class Delivery(Model):
    delivery_id: str
    flow_id: str
    session_key: str
    channel: str
    text: str
    status: str
    created_at: int
    updated_at: int
    to: str | None = None
    account_id: str | None = None
    thread_id: str | None = None
    attempts: int = 0
    last_error: str | None = None
    delivered_at: int | None = None


class Flow(Model):
    """A send's or spawn's exchange, step by step, with its stop reason and delivery state."""

    flow_id: str
    status: str
    requester_key: str
    requester_channel: str
    target_key: str
    target_channel: str
    message: str
    max_turns: int
    step_timeout_ms: int
    created_at: int
    updated_at: int
    chain_id: str
    kind: str = "send"
    flow_timeout_ms: int | None = None
    hops: int = 0
    chain_path: list[str] | None = None
    loop_skipped: str | None = None
    turns_started: int = 0
    blocked_turn: int | None = None
    stop_reason: str | None = None
    delivery_status: str | None = None
    error: str | None = None
    task: str | None = None
    cleanup: str | None = None
    mode: str | None = None
    expects_completion_message: bool = True
    completion_target: str | None = None
    task_name: str | None = None
    last_run_id: str | None = None
    ancestors: list[str] = Field(default_factory=list)
    steps: list[FlowStep] = Field(default_factory=list)
    trace_id: str | None = None
    delivery: Delivery | None = None


# --- sessions ------------------------------------------------------------------------------------------


class DeliveryContext(Model):
    channel: str | None = None
    to: str | None = None
    account_id: str | None = None
    thread_id: str | None = None


class _Session(Model):
    """What a session entry and a ``sessions_list`` row both say of a session."""

    key: str
    agent_id: str
    session_id: str
    kind: str
    updated_at: int
    label: str | None = None
    display_name: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    system_sent: bool | None = None
    aborted_last_run: bool | None = None
    send_policy: str | None = None
    queue_mode: str | None = None
    last_channel: str | None = None
    last_to: str | None = None
    last_account_id: str | None = None
    delivery_context: DeliveryContext | None = None
    spawned_by: str | None = None
    spawn_depth: int | None = None
    role: str | None = None
    status: str | None = None
    total_tokens: int | None = None
    context_tokens: int | None = None
    estimated_cost_usd: float | None = None
    started_at: int | None = None
    ended_at: int | None = None


class SessionEntry(_Session):
    """A session as ``GET /v1/sessions/{key}`` shows it."""

    created_at: int
    channel: str | None = None
    chat_type: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    spawn_flow_id: str | None = None
    spawn_chain: list[str] | None = None
    pending_children: int | None = None
    waiting: int | None = None
    unread_reports: int | None = None
    state_version: int | None = None
    mode: str | None = None
    cleanup: str | None = None
    deliver: bool | None = None
    archived_at: int | None = None
    killed_at: int | None = None
    attachments_dir: str | None = None
    queue_debounce_ms: int | None = None
    queue_cap: int | None = None
    queue_drop: str | None = None


class Actor(Model):
    id: str
    type: str = "agent"
    identity: dict[str, str] = Field(default_factory=dict)


class Owner(Model):
    actor: Actor


class SessionRow(_Session):
    """A row of ``sessions_list``."""

    channel: str
    archived: bool = False
    pinned: bool = False
    created_actor: Actor | None = None
    owner: Owner | None = None
    spawned_workspace_dir: str | None = None
    workspace_dir: str | None = None
    parent_session_key: str | None = None
    # How many state changes the session has recorded (absent: none).
    state_version: int | None = None
    child_sessions: list[str] | None = None
    derived_title: str | None = None
    last_message_preview: str | None = None
    messages: list[dict[str, Any]] | None = None
    runtime_ms: int | None = None
    transcript_path: str | None = None


class SessionsListResult(Model):
    count: int
    sessions: list[SessionRow]
    has_more: bool = False
    next_offset: int | None = None
    limit_applied: int | None = None


class PendingInputs(Model):
    """Inputs queued behind the running run; ``nextBefore`` pages on (``pendingBefore``)."""

    items: list[dict[str, Any]] = Field(default_factory=list)
    total: int = 0
    next_before: int | None = None


class SessionsHistoryResult(Model):
    """``sessions_history``: the transcript's messages as the release shows them (redacted, cut)."""

    session_key: str
    messages: list[dict[str, Any]]
    truncated: bool
    dropped_messages: bool
    content_truncated: bool
    content_redacted: bool
    bytes: int
    pending_inputs: PendingInputs = Field(default_factory=PendingInputs)
    offset: int | None = None
    next_offset: int | None = None
    has_more: bool | None = None
    total_messages: int | None = None


# --- sub-agents and status -----------------------------------------------------------------------------


class RunChain(Model):
    """A run's chain: its id, the run's hops on it and the sessions those hops reached."""

    chain_id: str
    hops: int
    path: list[str]


class StatusBudget(Model):
    daily_usd: float | None = None
    daily_tokens: int | None = None
    left_usd: float | None = None
    left_tokens: int | None = None
    source: str = "config"


class StateChanges(Model):
    """``session_status``'s changes after ``changesSince``: events (``sequence``, ``kind``, ``summary``,
    ...), ``truncated`` past 200, the first still kept, and ``historyGap`` when some are no longer kept."""

    events: list[dict[str, Any]]
    truncated: bool
    earliest_available_sequence: int
    history_gap: bool


class SessionStatusCard(Model):
    """``session_status``: model, tokens, cost, runs, children pending, ``state``."""

    session_key: str
    agent_id: str
    status_text: str
    model_ref: str
    model_source: str
    runs_queued: int
    runs_running: int
    queue_mode: str
    queue_mode_source: str
    children_pending: int
    state: str
    spawn_depth: int
    ok: bool = True
    changed_model: bool = False
    state_version: int = 0
    state_changes: StateChanges | None = None
    model: str | None = None
    model_provider: str | None = None
    model_override: str | None = None
    origin: dict[str, str] | None = None
    delivery_context: DeliveryContext | None = None
    thinking: str | None = None
    total_tokens: int | None = None
    estimated_cost_usd: float | None = None
    last_run_status: str | None = None
    last_run_chain: RunChain | None = None
    role: str | None = None
    spent_usd: float | None = None
    spent_tokens: int | None = None
    budget: StatusBudget | None = None


class SubagentRow(Model):
    key: str
    agent_id: str
    depth: int
    spawned_by: str
    status: str
    runtime_ms: int
    pending_report: bool
    label: str | None = None
    role: str | None = None
    total_tokens: int | None = None
    estimated_cost_usd: float | None = None
    waiting_for: int | None = None


class Execution(Model):
    state: str


class TaskRow(Model):
    task_id: str
    delivery_status: str
    execution: Execution
    status: str
    # ``subagent`` (a spawn) or ``cli`` (a run the spawner's sessions_send started in its child).
    runtime: str = "subagent"
    label: str | None = None
    progress_summary: str | None = None
    # How a ``cli`` task ended: ``completed``, ``failed`` or ``aborted``.
    terminal_summary: str | None = None
    error: str | None = None


class RunRow(Model):
    index: int
    run_id: str
    session_key: str
    label: str
    task: str
    status: str
    execution: Execution
    pending_descendants: int
    runtime: str
    runtime_ms: int
    model: str
    task_name: str | None = None
    delivery_status: str | None = None
    child_sessions: list[str] | None = None
    total_tokens: int | None = None
    started_at: int | None = None
    ended_at: int | None = None


class SubagentsList(Model):
    """A session's sub-agents (``subagents`` ``list``)."""

    requester_session_key: str
    caller_session_key: str
    caller_is_subagent: bool
    total: int
    task_total: int
    tasks: list[TaskRow]
    active: list[RunRow]
    recent: list[RunRow]
    text: str
    count: int
    subagents: list[SubagentRow]
    status: str = "ok"
    action: str = "list"


class SubagentInfo(Model):
    subagent: SubagentRow
    created_at: int
    updated_at: int
    action: str = "info"
    last_run_id: str | None = None
    last_run_status: str | None = None
    last_error: str | None = None


class SubagentsKilled(Model):
    killed: list[str]
    action: str = "kill"


class SubagentSteered(Model):
    target: str
    run_id: str
    delivered: str
    action: str = "steer"


# --- the fleet -----------------------------------------------------------------------------------------


class TrafficLimits(Model):
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None


class ModelTrafficRow(Model):
    model: str
    provider: str
    model_id: str
    limits: TrafficLimits
    learned: TrafficLimits
    requests_in_window: int = 0
    tokens_in_window: int = 0
    in_flight: int = 0
    waiting: int = 0
    cooldown_ms: int = 0


class ColdMoveFailure(Model):
    error: str
    at: int
    since: int


class StalledRun(Model):
    run_id: str
    session_key: str
    since: int
    owner: str = ""
    attempt: int = 1


class FleetView(Model):
    """``GET /v1/status``: queues, workers, lanes, flows, runs, deliveries, and the models' traffic."""

    queues: dict[str, int]
    workers: list[str]
    busy_lanes: int
    flows_in_progress: int
    reaper_ran_at: int | None = None
    cold_moves_failed: int = 0
    cold_move_failure: ColdMoveFailure | None = None
    runs_stalled: int = 0
    run_stalls: int = 0
    stalled_runs: list[StalledRun] = Field(default_factory=list)
    runs_created: dict[str, int] = Field(default_factory=dict)
    runs_finished: dict[str, int] = Field(default_factory=dict)
    deliveries: dict[str, int] = Field(default_factory=dict)
    models: list[ModelTrafficRow] = Field(default_factory=list)


class AgentBudget(Model):
    agent_id: str
    spent_usd: float
    spent_tokens: int
    source: str
    daily_usd: float | None = None
    daily_tokens: int | None = None
    left_usd: float | None = None
    left_tokens: int | None = None


class TreeBudget(Model):
    root_key: str
    spent_usd: float
    spent_tokens: int
    max_tree_cost_usd: float | None = None
    left_usd: float | None = None


class BudgetsView(Model):
    """``GET /v1/budgets``: every agent's spend today, every active sub-agent tree's."""

    day: str
    agents: list[AgentBudget]
    trees: list[TreeBudget]
