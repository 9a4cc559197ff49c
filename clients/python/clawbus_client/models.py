"""The API's answers, as a client reads them: camelCase on the wire, snake_case here.

The one place their fields are declared: the server's models (``clawbus.shared.wire``) subclass these,
narrowing what the server promises (a closed set of values, a field it always writes, its own nested
models) and adding what only the server does, so a field is added here, for both. The server's field order
is the one kept here, as the server writes it.

Read leniently: a field a newer server adds is kept (``model_extra``) and a value the client does not know
yet is taken as a string, so an older client keeps working against a newer server. Which fields exist and
what they mean: the server's OpenAPI document (``/openapi.json``) and docs/contract.md;
tests/unit/client/test_package.py checks the server's models against these.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field
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

    run_id: str | None = None
    status: str
    error: str
    # The session the refusal concerns, where the release names it.
    session_key: str | None = None
    # A spawn refused over its agentId: the agent asked for, as the release names it.
    role: str | None = None
    # A send or spawn a chain guard refused (docs/contract.md §4, "Chains"): the guard, and the path of
    # sessions the call would have made.
    guard: str | None = None
    path: list[str] | None = None


class AnnounceDelivery(Model):
    """What a send's result says of the announce's delivery (it is ``pending`` when the send returns)."""

    status: str
    mode: str = "announce"


class SendResult(Model):
    """``sessions_send``'s result (an inbound message's too): ``accepted``, ``ok`` with its reply, ..."""

    run_id: str
    # busy: a session whose queue mode is ``reject`` was running (runId: its running run); nothing queued.
    status: str
    session_key: str
    # ``queued`` for a turn of its own, ``steered`` into the target's running turn.
    target_disposition: str | None = None
    delivery: AnnounceDelivery | None = None
    reply: str | None = None
    message: str | None = None
    error: str | None = None
    # The run had started when it failed: the message did reach the target.
    sent_before_error: bool | None = None
    flow_id: str | None = None
    # clawbus's own: a wait an HTTP request held shorter than asked (gateway.maxWaitSeconds), said so.
    note: str | None = None
    # Asked for with ``watch: true``: whether the caller now watches the target (the release's last field).
    watched: bool | None = None


class NotifyResult(Model):
    """``sessions_send`` with ``mode="notify"``: the message is queued as context for the target's next
    turn, starting none. ``notification_id``: the note run that records it (``get_run``)."""

    status: str = "queued"
    session_key: str
    # The note run that records it in the target's transcript, in turn (``GET /v1/runs/{id}``).
    notification_id: str
    durability: str = "durable"
    run_started: bool = False


class AttachmentFile(Model):
    name: str
    bytes: int
    sha256: str


class AttachmentReceipt(Model):
    """What was written for a spawned child of the files handed to it, as in its ``.manifest.json``."""

    rel_dir: str
    count: int
    total_bytes: int
    files: Sequence[AttachmentFile]


class SpawnResult(Model):
    """``sessions_spawn``'s result: the child's session and first run; its report comes back when it ends."""

    status: str = "accepted"
    child_session_key: str
    run_id: str
    mode: str
    expects_completion_message: bool = True
    completion_target: str | None = None
    context: str = "isolated"
    task_name: str | None = None
    note: str | None = None
    resolved_model: str | None = None
    resolved_provider: str | None = None
    model_applied: bool | None = None
    attachments: AttachmentReceipt | None = None
    # The fan-out guard's warning: many reports of this session's children are unread.
    warning: str | None = None


class CommandReply(Model):
    """A chat command's answer (``/status``, ``/reset``...), where an inbound message was one."""

    command: str
    status: str
    session_key: str
    reply: str | None = None
    error: str | None = None
    # /stop: the session's runs it stopped (the running one ends ``aborted`` within about a second), and
    # the sub-agent sessions it killed with them (everything the session spawned); /subagents kill: the
    # sessions it killed.
    aborted: list[str] | None = None
    killed: list[str] | None = None


# --- runs ----------------------------------------------------------------------------------------------


class Usage(Model):
    """A run's tokens and cost; None where nothing says (a model that reported no usage, a model with no
    price configured)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


class Sampling(Model):
    """What a client of the OpenAI-compatible endpoints asked of the model (its token cap and sampling),
    for each of its run's model calls."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    response_format: dict[str, Any] | None = None


class RunSpec(Model):
    """What a run is asked to be when it is accepted; a ``Run`` is that and how it went."""

    run_id: str
    session_key: str
    agent_id: str
    kind: str
    flow_id: str | None = None
    parent_run_id: str | None = None
    turn: int | None = None
    # The system text the agent gets for this run only (the agent-to-agent context of docs/contract.md §4).
    context: str | None = None
    # Loop guard: the chain this run belongs to, how many sends and spawns deep it is, and the sessions
    # those hops reached, the chain's first session first.
    chain_id: str | None = None
    hops: int = 0
    chain_path: list[str] | None = None
    # A sub-agent run's runTimeoutSeconds, in ms: the step is interrupted and the run ends ``timeout``.
    timeout_ms: int | None = None
    # The trace the run belongs to (W3C traceparent of the span that asked for it).
    trace_parent: str | None = None
    # An OpenAI-compatible request's token cap and sampling, for each of the run's model calls.
    sampling: Sampling | None = None


class Run(RunSpec):
    """One agent turn in one session (docs/contract.md §8). Terminal states never change."""

    status: RunStatus
    seq: int
    created_at: int
    started_at: int | None = None
    ended_at: int | None = None
    reply: str | None = None
    error: str | None = None
    # Factories, not instances: pydantic deep-copies a default instance for every model it builds.
    usage: Usage = Field(default_factory=Usage)
    attempts: int = 0
    # Attempts that began and never ended (their worker lost, their lease lapsed), each retried by the next.
    interrupted: int = 0
    # Someone cancelled the run while a worker ran it: it ends ``aborted`` as soon as that worker hears of it.
    cancel_requested: bool = False
    # Why (the error it ends with): "run aborted", or what stopped it (an interrupting message, a kill).
    cancel_reason: str | None = None
    # A ``steer`` run taken in by the running run of its session (its message reached that run's step).
    steered_into: str | None = None
    # What the running run waits for before its next model call ("model capacity"), while it waits.
    waiting_for: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def trace_id(self) -> str | None:
        """The trace the run belongs to (docs/architecture.md, "Traces"), when traces are sent."""
        parts = (self.trace_parent or "").split("-")
        return parts[1] if len(parts) == 4 and len(parts[1]) == 32 else None


# --- flows and deliveries ------------------------------------------------------------------------------


class FlowStep(Model):
    step: str
    turn: int | None = None
    run_id: str | None = None
    session_key: str | None = None
    status: str | None = None
    reply: str | None = None


class Delivery(Model):
    """One outbound message to a chat channel, with its retries and final state."""

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
    kind: str = "send"
    status: str
    requester_key: str
    requester_channel: str
    target_key: str
    target_channel: str
    message: str
    max_turns: int
    # A step's bound, counted from when its run starts (time in a queue or a busy lane never counts).
    step_timeout_ms: int
    # The whole flow's bound: from the send (a spawn: from the child's end), so no flow lives forever.
    flow_timeout_ms: int | None = None
    created_at: int
    updated_at: int
    chain_id: str
    hops: int = 0
    # The chain's path: its primary run's (a send's, a spawned child's).
    chain_path: list[str] | None = None
    # Why the loop does not run at all (same session, maxPingPongTurns 0).
    loop_skipped: str | None = None
    turns_started: int = 0
    blocked_turn: int | None = None
    # Why the reply-back loop stopped (REPLY_SKIP, max turns, a failed turn, ...); for a flow that ended off
    # the normal path, the reason it ended instead, with ``error`` saying what happened.
    stop_reason: str | None = None
    delivery_status: str | None = None
    # What cut the flow short (a step failed or timed out); such failures never reach the caller.
    error: str | None = None
    # sessions_spawn: the child's task (attachment contents never stored), cleanup and mode.
    task: str | None = None
    cleanup: str | None = None
    mode: str | None = None
    # sessions_spawn: false is fire-and-forget (no announce, no report; delivery ``not_required``);
    # ``parent``: the requester's turn on the report is private (nothing posted); the child's taskName.
    expects_completion_message: bool = True
    completion_target: str | None = None
    task_name: str | None = None
    # sessions_spawn of an orchestrator: the child's latest run (a run on its children's reports), whose
    # end, once no child is pending, is the child's end; and whom to report to, nearest first, when the
    # requester is gone (the requester's own spawners).
    last_run_id: str | None = None
    ancestors: list[str] = Field(default_factory=list)
    steps: Sequence[FlowStep] = Field(default_factory=list)
    # The trace the exchange belongs to (its primary run's), when traces are sent; shown, never stored.
    trace_id: str | None = None
    delivery: Delivery | None = None


# --- sessions ------------------------------------------------------------------------------------------


class DeliveryContext(Model):
    channel: str | None = None
    to: str | None = None
    account_id: str | None = None
    # A thread of ``to`` (a Discord thread, a Slack thread's ts, a Telegram topic) messages are bound to.
    thread_id: str | None = None


class SessionFacts(Model):
    """What a session entry and a ``sessions_list`` row both say of a session."""

    label: str | None = None
    # A group chat's name, as its channel shows it (the inbound message's ``displayName``, or a PATCH).
    display_name: str | None = None
    model: str | None = None
    thinking_level: str | None = None
    # The agent's system text has gone to its model in this session (set when a model step commits).
    system_sent: bool | None = None
    aborted_last_run: bool | None = None
    send_policy: str | None = None
    # The session's own queue mode (``/queue``, ``PATCH``), over ``messages.queue``.
    queue_mode: str | None = None
    last_channel: str | None = None
    last_to: str | None = None
    last_account_id: str | None = None
    delivery_context: DeliveryContext | None = None
    spawned_by: str | None = None
    # How deep a spawned session is (its spawner's depth + 1; a session nobody spawned is 0), and what that
    # allows: an ``orchestrator`` may still spawn, a ``leaf`` may not. Written at spawn, never inferred.
    spawn_depth: int | None = None
    role: str | None = None
    # A spawned sub-agent session: how its run went (running|done|failed|killed|timeout).
    status: str | None = None
    total_tokens: int | None = None
    context_tokens: int | None = None
    estimated_cost_usd: float | None = None


class SessionEntry(SessionFacts):
    """A session as ``GET /v1/sessions/{key}`` shows it."""

    key: str
    agent_id: str
    session_id: str
    kind: str
    created_at: int
    updated_at: int
    channel: str | None = None
    chat_type: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    # Spawned sessions: the flow that reports this session to its spawner (its first run's id), and its
    # spawners, nearest first (its report goes to the nearest one that still exists).
    spawn_flow_id: str | None = None
    spawn_chain: list[str] | None = None
    # Children spawned that have not reported yet; ``waiting`` (a yield's number) while the session waits
    # for all of them (``sessions_yield``); reports recorded that no run of the session has read yet.
    pending_children: int | None = None
    waiting: int | None = None
    unread_reports: int | None = None
    # How many changes the session has had: its state log's head (docs/contract.md §10).
    state_version: int | None = None
    # Spawned sessions: run (report, then archive) or session (stays open, bound to a thread).
    mode: str | None = None
    cleanup: str | None = None
    # OpenClaw's deliver flag: a spawned session's own replies are never posted to a channel.
    deliver: bool | None = None
    archived_at: int | None = None
    # When its tree was stopped (``subagents kill``, ``/stop``, an orchestrator's cancel): it then waits for
    # no child, spawns nothing, and reports ``Status: killed``. A run merely cancelled leaves it unset.
    killed_at: int | None = None
    # Where this sub-agent's attachments were written, relative to its agent's workspace.
    attachments_dir: str | None = None
    # The session's own queue options (``/queue ... debounce: cap: drop:``, the release's names), over
    # ``messages.queue``'s; ``/queue default`` clears them with ``queueMode``.
    queue_debounce_ms: int | None = None
    queue_cap: int | None = None
    queue_drop: str | None = None
    # When its latest run started, and ended (unset while it runs), as the release keeps them on an entry.
    started_at: int | None = None
    ended_at: int | None = None


class Actor(Model):
    """Who made or owns a session, as the release writes it (an agent, for a spawned session)."""

    type: str = "agent"
    id: str
    identity: dict[str, str] = Field(default_factory=dict)


class Owner(Model):
    actor: Actor


class SessionRow(Model):
    """A ``sessions_list`` row: the release's fields (docs/contract.md §2), then clawbus's own."""

    key: str
    session_id: str
    agent_id: str
    kind: str
    channel: str
    archived: bool = False
    pinned: bool = False
    label: str | None = None
    created_actor: Actor | None = None
    owner: Owner | None = None
    spawned_workspace_dir: str | None = None
    workspace_dir: str | None = None
    display_name: str | None = None
    parent_session_key: str | None = None
    updated_at: int
    # How many state changes the session has recorded (docs/contract.md §10), left out at 0 as the release
    # leaves it out of a session with none.
    state_version: int | None = None
    # The bare model id (``gpt-4o-mini``), as the release shows it.
    model: str | None = None
    # The model's context window, and how much of it the latest context filled.
    context_tokens: int | None = None
    total_tokens: int | None = None
    status: str | None = None
    aborted_last_run: bool | None = None
    child_sessions: list[str] | None = None
    derived_title: str | None = None
    last_message_preview: str | None = None
    messages: list[dict[str, Any]] | None = None
    # clawbus's own, beyond the release's row (docs/contract.md, differences).
    # The latest run: when it started, ended (unset while it runs) and how long it ran, or has run so far
    # (what the release's gateway keeps on a session; its tool does not show them).
    started_at: int | None = None
    ended_at: int | None = None
    runtime_ms: int | None = None
    transcript_path: str | None = None
    thinking_level: str | None = None
    system_sent: bool | None = None
    send_policy: str | None = None
    queue_mode: str | None = None
    last_channel: str | None = None
    last_to: str | None = None
    last_account_id: str | None = None
    delivery_context: DeliveryContext | None = None
    spawned_by: str | None = None
    spawn_depth: int | None = None
    role: str | None = None
    estimated_cost_usd: float | None = None


class SessionsListResult(Model):
    count: int
    sessions: Sequence[SessionRow]
    has_more: bool = False
    next_offset: int | None = None
    limit_applied: int | None = None


class PendingInputs(Model):
    """Messages accepted into the session that no run has taken in yet (queued behind its running run): one
    page of them, the newest first chosen and shown oldest first, as the release pages them."""

    items: list[dict[str, Any]] = Field(default_factory=list)
    # Every pending input, not only this page's.
    total: int = 0
    # Where the next (older) page starts: pass it back as ``pendingBefore``; absent on the oldest page.
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
    # Paging, when an offset was asked for: where this page starts, where the next one does.
    offset: int | None = None
    next_offset: int | None = None
    has_more: bool | None = None
    total_messages: int | None = None


# --- sub-agents and status -----------------------------------------------------------------------------


class SubagentRow(Model):
    key: str
    label: str | None = None
    agent_id: str
    depth: int
    role: str | None = None
    spawned_by: str
    status: str
    runtime_ms: int
    total_tokens: int | None = None
    estimated_cost_usd: float | None = None
    # Its report to its spawner is still to come.
    pending_report: bool
    # While it waits (sessions_yield): the children it still waits for.
    waiting_for: int | None = None


class Execution(Model):
    """What a sub-agent's run is doing now, as the release observes it: ``queued``, ``running``, ``waiting``
    (it yielded, for its children) or ``finished``."""

    state: str


class TaskRow(Model):
    """A task as the release's task registry shows it (``subagents`` list's ``tasks``): a spawn (runtime
    ``subagent``), or a run a spawner's ``sessions_send`` started in its child (runtime ``cli``)."""

    task_id: str
    runtime: str = "subagent"
    # ``pending`` until its report is delivered; ``delivered``; ``not_applicable`` (it reported nothing,
    # ANNOUNCE_SKIP, or owes no report: expectsCompletionMessage false; a ``cli`` task delivers nothing);
    # ``failed`` or ``blocked`` (the requester's send policy refused its channel).
    delivery_status: str
    execution: Execution
    status: str
    label: str | None = None
    # Its latest reply (a spawn's).
    progress_summary: str | None = None
    # How it ended, in a word (a ``cli`` task's): ``completed``, ``failed`` or ``aborted``.
    terminal_summary: str | None = None
    error: str | None = None


class RunRow(Model):
    """One direct child, its latest run, as the release's ``active`` and ``recent`` rows show it."""

    index: int
    run_id: str
    session_key: str
    # The handle it was spawned with (``taskName``), when it has one.
    task_name: str | None = None
    label: str
    task: str
    # running, queued, done, failed, killed, timeout; ``waiting on N children`` (it yielded), ``active
    # (waiting on N children)`` (its run ended, its children have not reported).
    status: str
    execution: Execution
    delivery_status: str | None = None
    pending_descendants: int
    runtime: str
    runtime_ms: int
    child_sessions: list[str] | None = None
    model: str
    # The size of its latest prompt (else its input and output tokens), as the release counts it.
    total_tokens: int | None = None
    started_at: int | None = None
    ended_at: int | None = None


class SubagentsList(Model):
    """A session's sub-agents (``subagents`` ``list``): the release's keys, then clawbus's own rows."""

    status: str = "ok"
    action: str = "list"
    requester_session_key: str
    caller_session_key: str
    caller_is_subagent: bool
    # Direct children the session has, ended or not (``recentMinutes`` does not bound it).
    total: int
    task_total: int
    tasks: Sequence[TaskRow]
    active: Sequence[RunRow]
    recent: Sequence[RunRow]
    text: str
    count: int
    subagents: Sequence[SubagentRow]


class SubagentsKilled(Model):
    action: str = "kill"
    # The sessions stopped, the targets first, then what they spawned; each reports once, Status: killed.
    killed: list[str]


class SubagentSteered(Model):
    action: str = "steer"
    target: str
    run_id: str
    # ``next_step``: the running sub-agent takes the message in at its next model step; ``new_run``: it was
    # not running, so the message starts a run of its own.
    delivered: str


class SubagentInfo(Model):
    action: str = "info"
    subagent: SubagentRow
    created_at: int
    updated_at: int
    last_run_id: str | None = None
    last_run_status: str | None = None
    last_error: str | None = None


class StatusBudget(Model):
    """The card's agent's budget today: a limit absent is no limit."""

    daily_usd: float | None = None
    daily_tokens: int | None = None
    left_usd: float | None = None
    left_tokens: int | None = None
    # ``runtime``: an owner set it (PUT /v1/agents/{agentId}/budget); ``config``: the configuration's.
    source: str = "config"


class StateChanges(Model):
    """``session_status``'s changes after ``changesSince``: events (``sequence``, ``kind``, ``summary``,
    ...), ``truncated`` past 200, the first still kept, and ``historyGap`` when some are no longer kept."""

    events: list[dict[str, Any]]
    truncated: bool
    earliest_available_sequence: int
    history_gap: bool


class RunChain(Model):
    """A run's chain: its id, the run's hops on it and the sessions those hops reached."""

    chain_id: str
    hops: int
    path: list[str]


class SessionStatusCard(Model):
    """``session_status``: model, tokens, cost, runs, children pending, ``state``."""

    ok: bool = True
    session_key: str
    agent_id: str
    changed_model: bool = False
    # How many state changes the session has recorded, and with ``changesSince`` those after it.
    state_version: int = 0
    state_changes: StateChanges | None = None
    # With a model argument: the model now in force (bare id), its provider, and the session's own
    # override (None: cleared, the agent's model applies).
    model: str | None = None
    model_provider: str | None = None
    model_override: str | None = None
    status_text: str
    # A channel session's route: the channel its key names, and where its replies go.
    origin: dict[str, str] | None = None
    delivery_context: DeliveryContext | None = None
    # clawbus's own, beyond the release's details.
    model_ref: str
    model_source: str
    thinking: str | None = None
    total_tokens: int | None = None
    estimated_cost_usd: float | None = None
    runs_queued: int
    runs_running: int
    queue_mode: str
    queue_mode_source: str
    children_pending: int
    # ``waiting for N children`` while it yields, ``waiting for model capacity`` while its run waits for
    # its model's provider; else what its latest run did.
    state: str
    last_run_status: str | None = None
    # Where the session's latest run is on its chain (docs/contract.md §4, "Chains").
    last_run_chain: RunChain | None = None
    spawn_depth: int
    role: str | None = None
    # What the session's agent spent on model calls today (UTC), and its budget.
    spent_usd: float | None = None
    spent_tokens: int | None = None
    budget: StatusBudget | None = None


# --- the fleet -----------------------------------------------------------------------------------------


class ColdMoveFailure(Model):
    """The cold transcript store failing now: the last refused move's error and when (ms), and since when
    (ms: the first failure after a move last succeeded)."""

    error: str
    at: int
    since: int


class StalledRun(Model):
    """A run whose lease is renewed but that made no progress since ``since`` (ms) for longer than
    ``runs.stallSeconds``: reported, not stopped. ``owner`` is its lease's holder, ``attempt`` its claims."""

    run_id: str
    session_key: str
    since: int
    owner: str = ""
    attempt: int = 1


class FleetStatus(Model):
    """What the whole fleet is doing now."""

    queues: dict[str, int]  # messages waiting, by queue
    workers: list[str]  # node names with a live heartbeat
    busy_lanes: int  # sessions with a run queued or running
    flows_in_progress: int
    reaper_ran_at: int | None = None  # ms
    cold_moves_failed: int = 0  # moves the cold transcript store refused, since the deployment began
    cold_move_failure: ColdMoveFailure | None = None  # while it is failing
    runs_stalled: int = 0  # runs whose lease is renewed but that made no progress for runs.stallSeconds
    run_stalls: int = 0  # runs found stalled, since the deployment began (each stall once)
    stalled_runs: Sequence[StalledRun] = []  # the longest stalled first (at most 100)
    runs_created: dict[str, int] = {}  # by kind, since the deployment began
    runs_finished: dict[str, int] = {}  # by "<kind>:<status>"
    deliveries: dict[str, int] = {}  # by final state


class TrafficLimits(Model):
    """Per minute and at once; None: not limited (or not learned)."""

    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None


class ModelTrafficRow(Model):
    model: str  # ``<provider>/<model>``
    provider: str
    model_id: str
    limits: TrafficLimits
    learned: TrafficLimits
    # Calls started in the last minute and their tokens, calls under way, calls waiting for capacity.
    requests_in_window: int = 0
    tokens_in_window: int = 0
    in_flight: int = 0
    waiting: int = 0
    # What is left of the model's cooldown after a 429 (0: none).
    cooldown_ms: int = 0


class FleetView(FleetStatus):
    """``GET /v1/status``: queues, workers, lanes, flows, runs, deliveries, and the models' traffic."""

    models: Sequence[ModelTrafficRow] = Field(default_factory=list)


class AgentBudget(Model):
    """One agent's day: what it spent, its budget in force (None: not limited) and what is left of it."""

    agent_id: str
    spent_usd: float
    spent_tokens: int
    daily_usd: float | None = None
    daily_tokens: int | None = None
    left_usd: float | None = None
    left_tokens: int | None = None
    # ``runtime``: an owner set a value at runtime (the other may still be the configuration's).
    source: str


class TreeBudget(Model):
    """One sub-agent tree (its root session): what its sub-agents spent, against ``maxTreeCostUsd``."""

    root_key: str
    spent_usd: float
    spent_tokens: int
    max_tree_cost_usd: float | None = None
    left_usd: float | None = None


class BudgetsView(Model):
    """``GET /v1/budgets``: every agent's spend today, every active sub-agent tree's."""

    day: str
    agents: Sequence[AgentBudget]
    trees: Sequence[TreeBudget]
