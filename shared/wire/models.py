"""The domain's data shapes, and the typed parameters and results of every tool.

camelCase on the wire (OpenClaw's names), snake_case in Python. These models are the edge: the HTTP API,
the CLI client and the stored hashes all go through them.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    computed_field,
)
from pydantic.alias_generators import to_camel

from clawbus.shared.base import trace_context
from clawbus.shared.base.session_keys import SessionKind
from clawbus.shared.base.text import CONTROL_CLASS, has_control_characters
from clawbus.shared.base.tool_args import list_required


class Wire(BaseModel):
    # Shapes we emit: a client reading a newer server's output ignores fields it does not know yet.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", json_schema_extra=list_required
    )

    def wire(self) -> dict[str, Any]:
        """The JSON shape callers see: camelCase, absent fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def content_text(self) -> str:
        return content_text(self.wire())

    def tool_result(self) -> dict[str, Any]:
        """A tool's result as OpenClaw's ``/tools/invoke`` answers it: ``{content, details}``
        (docs/contract.md, "On the wire")."""
        details = self.wire()
        return {"content": [{"type": "text", "text": content_text(details)}], "details": details}


def content_text(details: dict[str, Any]) -> str:
    """The text a model reads of a tool's result, OpenClaw's ``content`` block: a status card's text, else the
    details as JSON, indented as the release writes it."""
    status_text = details.get("statusText")
    if isinstance(status_text, str):
        return status_text
    return json.dumps(details, indent=2, ensure_ascii=False)


# --- transcript ----------------------------------------------------------------------------------------


class Provenance(Wire):
    """Where an injected message came from, so transcript readers can tell agents from people."""

    kind: Literal["inter_session", "subagent_announce"]
    source_session_key: str | None = None
    source_channel: str | None = None
    source_tool: str | None = None
    source_run_id: str | None = None


class TextBlock(Wire):
    type: Literal["text"] = "text"
    text: str


class ToolCallBlock(Wire):
    """An assistant's call of a tool, as OpenClaw's transcript records it."""

    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = {}


ContentBlock = Annotated[TextBlock | ToolCallBlock, Field(discriminator="type")]


Role = Literal["user", "assistant", "toolResult", "tool", "system"]
TOOL_ROLES: frozenset[str] = frozenset({"toolResult", "tool"})


class Message(Wire):
    id: str
    role: Role
    content: list[ContentBlock]
    timestamp: int
    run_id: str | None = None
    provenance: Provenance | None = None
    # A toolResult answers one call.
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool | None = None
    # Why an assistant message stopped short: "aborted" when its run was cancelled mid-answer.
    stop_reason: str | None = None
    # An assistant message's model, as the release records it: the API kind (``openai-completions``),
    # the provider, the bare model id and the provider's id of the answer.
    api: str | None = None
    provider: str | None = None
    model: str | None = None
    response_id: str | None = None
    # What the step that wrote it used, in the release's shape (``step_usage``).
    usage: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return [block for block in self.content if isinstance(block, ToolCallBlock)]

    @classmethod
    def of(
        cls,
        role: Role,
        text: str,
        *,
        timestamp: int,
        run_id: str | None = None,
        provenance: Provenance | None = None,
    ) -> Message:
        return cls(
            id=str(uuid.uuid4()),
            role=role,
            content=[TextBlock(text=text)],
            timestamp=timestamp,
            run_id=run_id,
            provenance=provenance,
        )


# --- sessions ------------------------------------------------------------------------------------------


class DeliveryContext(Wire):
    channel: str | None = None
    to: str | None = None
    account_id: str | None = None
    # A thread of ``to`` (a Discord thread, a Slack thread's ts, a Telegram topic) messages are bound to.
    thread_id: str | None = None

    def is_empty(self) -> bool:
        return not (self.channel or self.to or self.account_id or self.thread_id)


SendPolicyValue = Literal["allow", "deny"]
SpawnRole = Literal["orchestrator", "leaf"]
# What a message does when it arrives while its session is busy (``messages.queue``, docs/contract.md §11):
# followup, a run of its own queued behind the others; steer, into the running run at its next model step;
# collect, folded with those within debounceMs into one queued run; interrupt, the running run is stopped
# and the queue dropped, this one runs next; reject, refused.
QueueMode = Literal["followup", "steer", "collect", "interrupt", "reject"]
QUEUE_MODES: tuple[QueueMode, ...] = ("followup", "steer", "collect", "interrupt", "reject")
# What goes when a session's queue is past its cap (``messages.queue.drop``, a session's ``/queue drop:``).
QueueDrop = Literal["old", "new", "summarize"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high"]
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high")


class SessionFacts(Wire):
    """What an entry and a ``sessions_list`` row both show."""

    label: str | None = None
    # A group chat's name, as its channel shows it (the inbound message's ``displayName``, or a PATCH).
    display_name: str | None = None
    model: str | None = None
    thinking_level: ThinkingLevel | None = None
    # The agent's system text has gone to its model in this session (set when a model step commits).
    system_sent: bool | None = None
    aborted_last_run: bool | None = None
    send_policy: SendPolicyValue | None = None
    # The session's own queue mode (``/queue``, ``PATCH``), over ``messages.queue``.
    queue_mode: QueueMode | None = None
    last_channel: str | None = None
    last_to: str | None = None
    last_account_id: str | None = None
    delivery_context: DeliveryContext | None = None
    spawned_by: str | None = None
    # How deep a spawned session is (its spawner's depth + 1; a session nobody spawned is 0), and what that
    # allows: an ``orchestrator`` may still spawn, a ``leaf`` may not. Written at spawn, never inferred.
    spawn_depth: int | None = None
    role: SpawnRole | None = None
    # A spawned sub-agent session: how its run went (running|done|failed|killed|timeout).
    status: Literal["running", "done", "failed", "killed", "timeout"] | None = None
    total_tokens: int | None = None
    context_tokens: int | None = None
    estimated_cost_usd: float | None = None


class SessionEntry(SessionFacts):
    key: str
    agent_id: str
    session_id: str
    kind: SessionKind
    created_at: int
    updated_at: int
    channel: str | None = None
    chat_type: Literal["direct", "group", "channel"] | None = None
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
    # How many changes the session has had: its state log's head (docs/contract.md §10), counted by the
    # scripts that make them, so a page of list rows reads it with the entries.
    state_version: int | None = None
    # Spawned sessions: run (report, then archive) or session (stays open, bound to a thread).
    mode: Literal["run", "session"] | None = None
    cleanup: Literal["delete", "keep"] | None = None
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
    queue_drop: QueueDrop | None = None
    # When its latest run started, and ended (unset while it runs), as the release keeps them on an entry.
    started_at: int | None = None
    ended_at: int | None = None


class ThreadBinding(Wire):
    """A chat thread bound to a sub-agent's session (``sessions_spawn`` with ``thread: true``): messages in
    the thread go to ``session_key`` while the binding holds, then to ``parent_key`` (who spawned it)."""

    channel: str
    thread_id: str
    session_key: str
    parent_key: str
    bound_at: int
    last_active_at: int
    # Idle or old past its limits, or its session gone: the thread's messages go to the parent again.
    released: bool = False
    # This binding's own limits (``/session idle|max-age``), over the channel's; 0: never.
    idle_timeout_ms: int | None = None
    max_age_ms: int | None = None


# --- runs ----------------------------------------------------------------------------------------------


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


# ``report``: a sub-agent's agent run on its children's reports (one report, or all of them when it was
# woken from a yield); ``note``: a message recorded in a session's transcript in turn, with no agent step.
# ``steer``: a message for a session that is running: the running run takes it in at its next model step
# (``runs.absorb_steers``), else it runs as a run of its own when its turn comes.
# ``collect``: several chat messages folded into one run (``messages.queue.mode`` collect).
RunKind = Literal[
    "chat",
    "send",
    "reply",
    "announce",
    "subagent",
    "report",
    "steer",
    "collect",
    "note",
    "relay",
]


class Usage(Wire):
    """A run's tokens and cost; None where nothing says (a model that reported no usage, a model with no
    price configured). A sub-agent's report prints ``?`` for those (docs/contract.md §6)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None

    def plus(self, other: Usage) -> Usage:
        """Both steps' usage: what either knows is summed; unknown only where neither knows."""
        return Usage(
            input_tokens=_sum(self.input_tokens, other.input_tokens),
            output_tokens=_sum(self.output_tokens, other.output_tokens),
            cost_usd=_sum(self.cost_usd, other.cost_usd),
        )


_N = TypeVar("_N", int, float)


def _sum(a: _N | None, b: _N | None) -> _N | None:
    return b if a is None else a if b is None else a + b


class Sampling(Wire):
    """What a client of the OpenAI-compatible endpoints asked of the model (its token cap and sampling), as
    the release hands them to every model call of the request's run (its ``streamParams``). Each is applied
    by runtimes that call a model (``shared.adapters.runtimes.openai``); validated at the edge."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    stop: list[str] | None = None
    response_format: dict[str, Any] | None = None

    def is_empty(self) -> bool:
        return not self.model_dump(exclude_none=True)


class RunSpec(Wire):
    """What a run is asked to be when it is accepted; a ``Run`` is that and how it went."""

    run_id: str
    session_key: str
    agent_id: str
    kind: RunKind
    flow_id: str | None = None
    parent_run_id: str | None = None
    turn: int | None = None
    # The system text the agent gets for this run only (the agent-to-agent context of docs/contract.md §4).
    context: str | None = None
    # Loop guard: the chain this run belongs to, how many sends and spawns deep it is, and the sessions
    # those hops reached, the chain's first session first (shared/domain/chains.py).
    chain_id: str | None = None
    hops: int = 0
    chain_path: list[str] | None = None
    # A sub-agent run's runTimeoutSeconds, in ms: the step is interrupted and the run ends ``timeout``.
    timeout_ms: int | None = None
    # The trace the run belongs to (W3C traceparent of the span that asked for it;
    # shared/base/trace_context.py).
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
        return trace_context.trace_id_of(self.trace_parent)


# --- flows and deliveries ------------------------------------------------------------------------------

DeliveryState = Literal["pending", "delivered", "failed", "skipped", "blocked"]
# A flow's delivery, which may also owe none: a fire-and-forget spawn's (the release's ``not_required``).
FlowDeliveryState = Literal["pending", "delivered", "failed", "skipped", "blocked", "not_required"]

# How a flow ended: ``completed`` on the normal path (whatever its delivery's state), else what cut it
# short. The label of clawbus_flows_ended_total, and the stopReason of a flow that ended early.
FlowEndReason = Literal[
    "completed",
    "primary_failed",  # the send's primary run (or nothing else) ended in error, timeout or abort
    "no_reply",  # the target answered nothing: there is nothing to announce
    "step_timeout",  # a step's run was still running past the step bound
    "announce_failed",  # the announce run ended in error, timeout or abort
    "flow_timeout",  # the flow outlived session.agentToAgent.flowTimeoutSeconds
    "gone",  # a run or session the flow needed was deleted
    "canceled",  # POST /v1/flows/{id}/cancel: no step starts after it
]


class Delivery(Wire):
    """One outbound message to a chat channel, with its retries and final state."""

    delivery_id: str
    flow_id: str
    session_key: str
    channel: str
    text: str
    status: DeliveryState
    created_at: int
    updated_at: int
    to: str | None = None
    account_id: str | None = None
    thread_id: str | None = None
    attempts: int = 0
    last_error: str | None = None
    delivered_at: int | None = None


class DeliveryClaim(StrEnum):
    """What a delivery attempt's claim found."""

    CLAIMED = "claimed"
    BUSY = "busy"
    DONE = "done"
    MISSING = "missing"


class FlowStep(Wire):
    step: Literal["run", "reply_turn", "announce", "deliver", "relay"]
    turn: int | None = None
    run_id: str | None = None
    session_key: str | None = None
    status: str | None = None
    reply: str | None = None


class Flow(Wire):
    """A sessions_send exchange: primary run, reply-back turns, announce, delivery (docs/contract.md §4).

    The flow id is the primary run's id; every later step's run and delivery id derive from it, so a step
    that runs twice finds its run already there.
    """

    flow_id: str
    kind: Literal["send", "spawn"] = "send"
    status: Literal["running", "done"]
    requester_key: str
    requester_channel: str
    target_key: str
    target_channel: str
    message: str
    max_turns: int
    # A step's bound, counted from when its run starts (time in a queue or a busy lane never counts).
    step_timeout_ms: int
    # The whole flow's bound: from the send (a spawn: from the child's end), so no flow lives forever.
    flow_timeout_ms: int = 3_600_000
    created_at: int
    updated_at: int
    chain_id: str
    hops: int = 0
    # The chain's path (shared/domain/chains.py): its primary run's (a send's, a spawned child's).
    chain_path: list[str] | None = None
    # Why the loop does not run at all (same session, maxPingPongTurns 0).
    loop_skipped: str | None = None
    turns_started: int = 0
    blocked_turn: int | None = None
    # Why the reply-back loop stopped (REPLY_SKIP, max turns, a failed turn, ...); for a flow that ended off
    # the normal path, one of the FlowEndReason codes instead, with ``error`` saying what happened.
    stop_reason: str | None = None
    delivery_status: FlowDeliveryState | None = None
    # What cut the flow short (a step failed or timed out); such failures never reach the caller.
    error: str | None = None
    # sessions_spawn: the child's task (attachment contents never stored), cleanup and mode.
    task: str | None = None
    cleanup: Literal["delete", "keep"] | None = None
    mode: Literal["run", "session"] | None = None
    # sessions_spawn: false is fire-and-forget (no announce, no report; delivery ``not_required``);
    # ``parent``: the requester's turn on the report is private (nothing posted); the child's taskName.
    expects_completion_message: bool = True
    completion_target: Literal["parent"] | None = None
    task_name: str | None = None
    # sessions_spawn of an orchestrator: the child's latest run (a run on its children's reports), whose
    # end, once no child is pending, is the child's end; and whom to report to, nearest first, when the
    # requester is gone (the requester's own spawners).
    last_run_id: str | None = None
    ancestors: list[str] = Field(default_factory=list)
    steps: list[FlowStep] = Field(default_factory=list)
    # The trace the exchange belongs to (its primary run's), when traces are sent; shown, never stored.
    trace_id: str | None = None
    delivery: Delivery | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A flow and everything its next step depends on (the store reads it in one round trip)."""

    flow: Flow
    primary: Run | None
    turns: list[Run | None]
    announce: Run | None
    delivery: Delivery | None
    # A spawn's child as it stands: its latest run (the primary, unless it ran on its children's reports),
    # the children it still waits for, and whether it was killed (then it waits for none).
    latest: Run | None = None
    children_pending: int = 0
    child_killed: bool = False
    # A spawn's completion relayed by a top-level requester: its agent's turn on the report.
    relay: Run | None = None


# --- tool parameters -----------------------------------------------------------------------------------


class Params(BaseModel):
    """Tool arguments: camelCase (snake_case accepted too), unknown ones ignored, as the release reads
    them (``shared.base.tool_args``)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", json_schema_extra=list_required
    )


def message_size(value: str, info: ValidationInfo) -> str:
    """Bounded by ``gateway.limits.messageBytes`` (passed in the validation context by the edge)."""
    limit = (info.context or {}).get("message_bytes")
    if limit is not None and len(value.encode("utf-8")) > limit:
        raise ValueError(f"too large: {len(value.encode('utf-8'))} bytes (limit {limit})")
    if not value.strip():
        raise ValueError("must not be empty")
    return value


# Not empty and not only whitespace; the pattern says so in the published schema too.
MessageText = Annotated[str, Field(min_length=1, pattern=r"\S"), AfterValidator(message_size)]


def _floored(value: Any) -> Any:
    """A count written as any JSON number (the published schemas say ``number``): ``1.5`` is 1."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return math.floor(value)
    return value


# A count a caller may write as any JSON number; the fractional part is dropped.
Count = Annotated[int, BeforeValidator(_floored)]


def clamped(default: int, low: int, high: int) -> Any:
    def clamp(value: int | None) -> int:
        return default if value is None else max(low, min(high, value))

    return AfterValidator(clamp)


def _printable(value: str) -> str:
    if has_control_characters(value):
        raise ValueError("must not contain control characters")
    return value


# Bounds on every text argument: a caller gets a 400 naming the field, not a slow or huge store write.
# Not blank, no control characters: the published pattern says so, as the check does.
_DISPLAY_NAME = rf"^[^{CONTROL_CLASS}]*[^\s{CONTROL_CLASS}][^{CONTROL_CLASS}]*$"
DisplayName = Annotated[
    str, Field(min_length=1, max_length=128, pattern=_DISPLAY_NAME), AfterValidator(_printable)
]
SessionRef = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_printable)]
AgentRef = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_printable)]
Label = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_printable)]


class CommandReply(Wire):
    """The answer to a standalone chat command (``/send on``, ``/stop``, ``/queue``, ``/status``,
    ``/subagents``, ``/agents``, ``/session``; ``shared.commands``): handled by clawbus, no agent run.
    ``reply`` is what the command says (the release's words), ``error`` why it did nothing."""

    command: str
    status: Literal["ok", "error"]
    session_key: str
    reply: str | None = None
    error: str | None = None
    # /stop: the session's runs it stopped (the running one ends ``aborted`` within about a second), and
    # the sub-agent sessions it killed with them (everything the session spawned); /subagents kill: the
    # sessions it killed.
    aborted: list[str] | None = None
    killed: list[str] | None = None


class InboundMessageParams(Params):
    """A chat message arriving from a channel into a session (``POST /v1/sessions/{key}/messages``):
    clawbus's own route, whose body is read strictly (an unknown field is an error)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    message: MessageText
    # Who wrote it on the channel; owner-only commands compare ``<channel>:<senderId>`` to
    # ``commands.ownerAllowFrom``.
    sender_id: str | None = Field(None, min_length=1, max_length=256)
    channel: str | None = Field(None, min_length=1, max_length=64)
    chat_type: Literal["direct", "group", "channel"] | None = None
    to: str | None = Field(None, min_length=1, max_length=512)
    account_id: str | None = Field(None, min_length=1, max_length=256)
    # The chat's name on its channel (a group's title): recorded as the session's displayName.
    display_name: DisplayName | None = None
    # This message's own queue mode, over the session's and the configuration's.
    queue_mode: QueueMode | None = None
    # Strict: a JSON true or false is no number of seconds.
    timeout_seconds: float = Field(30, ge=0, strict=True)
    # The channel's own id of this message (Telegram's update id, Discord's or Slack's message id): a
    # redelivery of it to this session makes no second run.
    message_id: str | None = Field(None, min_length=1, max_length=256)


# --- tool results --------------------------------------------------------------------------------------


class ToolFailure(Wire):
    """A tool's refusal: returned as a result, never raised into the caller's run."""

    run_id: str | None = None
    status: Literal["error", "forbidden"]
    error: str
    # The session the refusal concerns, where the release names it.
    session_key: str | None = None
    # A spawn refused over its agentId: the agent asked for, as the release names it.
    role: str | None = None
    # A send or spawn a chain guard refused (shared/domain/chains.py): the guard, and the path of sessions
    # the call would have made.
    guard: str | None = None
    path: list[str] | None = None


# --- the fleet -----------------------------------------------------------------------------------------


class ColdMoveFailure(Wire):
    """The cold transcript store failing now: the last refused move's error and when (ms), and since when
    (ms: the first failure after a move last succeeded)."""

    error: str
    at: int
    since: int


class StalledRun(Wire):
    """A run whose lease is renewed but that made no progress (no event, no memoized step) since ``since``
    (ms) for longer than ``runs.stallSeconds``: reported by the reaper's watchdog, not stopped. ``owner`` is
    its lease's holder (the attempt's task id), ``attempt`` its claims so far."""

    run_id: str
    session_key: str
    since: int
    owner: str = ""
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class FleetFigures:
    runs_created: dict[str, int]  # by kind
    runs_finished: dict[tuple[str, str], int]  # by (kind, status)
    deliveries: dict[str, int]  # by final state
    flows_ended: dict[str, int]  # by reason (FlowEndReason)
    queue_depths: dict[str, int]
    messages_dropped: dict[str, int] = field(default_factory=dict)  # by messages.queue.drop policy
    workers: list[str] = field(default_factory=list)  # node names with a live heartbeat
    busy_lanes: int = 0  # sessions with a run queued or running
    flows_in_progress: int = 0
    reaper_ran_at: int | None = None  # ms
    cold_moves_failed: int = 0  # moves the cold transcript store refused, since the deployment began
    cold_move_failure: ColdMoveFailure | None = None  # while it is failing
    runs_stalled: int = 0  # runs the stall watchdog reports now
    run_stalls: int = 0  # runs it found stalled, since the deployment began


@dataclass(frozen=True, slots=True)
class InFlight:
    lanes: list[tuple[str, list[str]]]  # (session key, its lane's run ids, the head first)
    flows: list[str]  # flows in progress


class InFlightLane(Wire):
    session_key: str
    run_ids: list[str]  # its lane: the run running (or next to run) first, then the queued ones


class InFlightView(Wire):
    """``GET /v1/inflight``: the work under way across the fleet, for an operator to follow or stop."""

    lanes: list[InFlightLane]
    flows: list[str]  # ids of the flows in progress


class FleetStatus(Wire):
    """``GET /v1/status`` (``clawbus status``): what the whole fleet is doing now."""

    queues: dict[str, int]  # messages waiting, by queue
    workers: list[str]  # node names with a live heartbeat
    busy_lanes: int  # sessions with a run queued or running
    flows_in_progress: int
    reaper_ran_at: int | None = None  # ms
    cold_moves_failed: int = 0  # moves the cold transcript store refused, since the deployment began
    cold_move_failure: ColdMoveFailure | None = None  # while it is failing
    runs_stalled: int = 0  # runs whose lease is renewed but that made no progress for runs.stallSeconds
    run_stalls: int = 0  # runs found stalled, since the deployment began (each stall once)
    stalled_runs: list[StalledRun] = []  # the longest stalled first (at most 100)
    runs_created: dict[str, int] = {}  # by kind, since the deployment began
    runs_finished: dict[str, int] = {}  # by "<kind>:<status>"
    deliveries: dict[str, int] = {}  # by final state
