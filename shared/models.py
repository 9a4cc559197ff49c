"""The domain's data shapes, and the typed parameters and results of every tool.

camelCase on the wire (OpenClaw's names), snake_case in Python. These models are the edge: the HTTP API,
the CLI client and the stored hashes all go through them.
"""

from __future__ import annotations

import re
import uuid
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from shared.keys import SessionKind


class Wire(BaseModel):
    # Shapes we emit: a client reading a newer server's output ignores fields it does not know yet.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def wire(self) -> dict[str, Any]:
        """The JSON shape callers see: camelCase, absent fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


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
            id=uuid.uuid4().hex,
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

    def is_empty(self) -> bool:
        return not (self.channel or self.to or self.account_id)


SendPolicyValue = Literal["allow", "deny"]
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high"]
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high")


class SessionFacts(Wire):
    """What an entry and a ``sessions_list`` row both show."""

    label: str | None = None
    display_name: str | None = None
    model: str | None = None
    thinking_level: ThinkingLevel | None = None
    verbose_level: str | None = None
    system_sent: bool | None = None
    aborted_last_run: bool | None = None
    send_policy: SendPolicyValue | None = None
    last_channel: str | None = None
    last_to: str | None = None
    last_account_id: str | None = None
    delivery_context: DeliveryContext | None = None
    spawned_by: str | None = None
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
    spawn_depth: int | None = None
    # Spawned sessions: run (announce, then archive) or session (stays open, bound to a thread).
    mode: Literal["run", "session"] | None = None
    cleanup: Literal["delete", "keep"] | None = None
    # OpenClaw's deliver flag: a spawned session's own replies are never posted to a channel.
    deliver: bool | None = None
    archived_at: int | None = None
    # Where this sub-agent's attachments were written, relative to its agent's workspace.
    attachments_dir: str | None = None


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


# ``note``: a message recorded in a session's transcript in turn (a sub-agent's announce), with no agent step.
RunKind = Literal["chat", "send", "reply", "announce", "subagent", "subagent_announce", "note"]


class Usage(Wire):
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


class Run(Wire):
    """One agent turn in one session (SPEC 8). Terminal states never change."""

    run_id: str
    session_key: str
    agent_id: str
    kind: RunKind
    status: RunStatus
    seq: int
    created_at: int
    flow_id: str | None = None
    parent_run_id: str | None = None
    turn: int | None = None
    started_at: int | None = None
    ended_at: int | None = None
    reply: str | None = None
    error: str | None = None
    usage: Usage = Usage()
    attempts: int = 0
    # The system text the agent gets for this run only (the agent-to-agent context of SPEC 4).
    context: str | None = None
    # Loop guard: the chain of sends this run belongs to, and how many sends deep it is.
    chain_id: str | None = None
    hops: int = 0
    # A sub-agent run's runTimeoutSeconds, in ms: the step is interrupted and the run ends ``timeout``.
    timeout_ms: int | None = None


# --- flows and deliveries ------------------------------------------------------------------------------

DeliveryState = Literal["pending", "delivered", "failed", "skipped", "blocked"]


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
    attempts: int = 0
    last_error: str | None = None
    delivered_at: int | None = None


class FlowStep(Wire):
    step: Literal["run", "reply_turn", "announce", "deliver", "subagent_announce"]
    turn: int | None = None
    run_id: str | None = None
    session_key: str | None = None
    status: str | None = None
    reply: str | None = None


class Flow(Wire):
    """A sessions_send exchange: primary run, reply-back turns, announce, delivery (SPEC 4).

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
    step_timeout_ms: int
    created_at: int
    updated_at: int
    chain_id: str
    hops: int = 0
    # Why the loop does not run at all (no requester session, same session, maxPingPongTurns 0).
    loop_skipped: str | None = None
    turns_started: int = 0
    blocked_turn: int | None = None
    stop_reason: str | None = None
    delivery_status: DeliveryState | None = None
    # Why the flow ended early (a step failed or timed out); such failures never reach the caller.
    error: str | None = None
    # sessions_spawn: the child's task (attachment contents never stored), cleanup and mode.
    task: str | None = None
    cleanup: Literal["delete", "keep"] | None = None
    mode: Literal["run", "session"] | None = None
    steps: list[FlowStep] = []
    delivery: Delivery | None = None


# --- tool parameters -----------------------------------------------------------------------------------


class Params(BaseModel):
    """Tool arguments: camelCase, unknown keys rejected so a misspelt argument is an error, not ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def _message_size(value: str, info: ValidationInfo) -> str:
    """Bounded by ``gateway.limits.messageBytes`` (passed in the validation context by the edge)."""
    limit = (info.context or {}).get("message_bytes")
    if limit is not None and len(value.encode("utf-8")) > limit:
        raise ValueError(f"too large: {len(value.encode('utf-8'))} bytes (limit {limit})")
    if not value.strip():
        raise ValueError("must not be empty")
    return value


MessageText = Annotated[str, AfterValidator(_message_size)]


def _clamped(default: int, low: int, high: int) -> Any:
    def clamp(value: int | None) -> int:
        return default if value is None else max(low, min(high, value))

    return AfterValidator(clamp)


# C0, DEL and C1: no key, label or file name has a use for them, and a log line with one can lie.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _printable(value: str) -> str:
    if CONTROL_CHARACTERS.search(value):
        raise ValueError("must not contain control characters")
    return value


# Bounds on every text argument: a caller gets a 400 naming the field, not a slow or huge store write.
SessionRef = Annotated[str, Field(min_length=1, max_length=512), AfterValidator(_printable)]
AgentRef = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_printable)]
Label = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_printable)]


class SessionsListParams(Params):
    kinds: list[Annotated[str, Field(max_length=32)]] | None = Field(
        None, max_length=16, description="Only these kinds: main, group, cron, hook, node, other."
    )
    limit: Annotated[int | None, _clamped(50, 1, 200)] = Field(None, description="At most this many (1-200).")
    active_minutes: int | None = Field(None, ge=1, description="Only sessions active in the last N minutes.")
    message_limit: Annotated[int | None, _clamped(0, 0, 20)] = Field(
        None, description="Include each session's last N messages (0-20)."
    )

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str] | None) -> list[str] | None:
        """Unknown kinds are dropped; none left means no filter (SPEC 2)."""
        if kinds is None:
            return None
        wanted = {k.strip().lower() for k in kinds} & {"main", "group", "cron", "hook", "node", "other"}
        return sorted(wanted) or None


class SessionsHistoryParams(Params):
    session_key: SessionRef = Field(description="The session's key (from sessions_list) or sessionId.")
    limit: Annotated[int | None, _clamped(200, 1, 1000)] = Field(None, description="Last N messages.")
    include_tools: bool = Field(False, description="Include tool calls and tool results.")


class CommandReply(Wire):
    """The answer to a standalone chat command (``/send on``): handled by clawbus, no agent run."""

    command: str
    status: Literal["ok", "error"]
    session_key: str
    reply: str | None = None
    error: str | None = None


class AttachmentIn(Params):
    name: str = Field(max_length=255)
    content: str
    encoding: Literal["utf8", "base64"] = "utf8"
    mime_type: str | None = Field(None, max_length=255)


class AttachAs(Params):
    mount_path: str | None = Field(None, max_length=1024)


class SessionsSpawnParams(Params):
    task: MessageText = Field(description="What the sub-agent should do.")
    label: Label | None = Field(None, description="A name for the child session.")
    agent_id: AgentRef | None = Field(None, description="The agent to spawn (agents_list); default: yours.")
    model: str | None = Field(None, max_length=256, description="Model ref <provider>/<model> for the child.")
    thinking: str | None = Field(None, max_length=32, description="off, minimal, low, medium or high.")
    run_timeout_seconds: float | None = Field(None, ge=0, description="End the child's run after this long.")
    thread: bool = False
    mode: Literal["run", "session"] | None = None
    cleanup: Literal["delete", "keep"] = "keep"
    sandbox: Literal["inherit", "require"] = "inherit"
    attachments: list[AttachmentIn] | None = Field(None, max_length=1000)
    attach_as: AttachAs | None = None
    # Channel routing belongs to sessions_send; these are accepted only to be refused with that advice.
    target: Any = None
    channel: Any = None
    to: Any = None
    thread_id: Any = None
    reply_to: Any = None


class SessionsSendParams(Params):
    session_key: SessionRef | None = Field(None, description="The target session's key (or use label).")
    label: Label | None = Field(None, description="The target session's label (instead of sessionKey).")
    agent_id: AgentRef | None = Field(None, description="With label: the agent whose label it is.")
    message: MessageText = Field(description="The message to send.")
    timeout_seconds: float = Field(
        30, ge=0, description="Wait this long for the reply; 0 sends and returns at once."
    )


class InboundMessageParams(Params):
    """A chat message arriving from a channel into a session (``POST /v1/sessions/{key}/messages``)."""

    message: MessageText
    # Who wrote it on the channel; owner-only commands compare ``<channel>:<senderId>`` to
    # ``commands.ownerAllowFrom``.
    sender_id: str | None = Field(None, min_length=1, max_length=256)
    channel: str | None = Field(None, min_length=1, max_length=64)
    chat_type: Literal["direct", "group", "channel"] | None = None
    to: str | None = Field(None, min_length=1, max_length=512)
    account_id: str | None = Field(None, min_length=1, max_length=256)
    timeout_seconds: float = Field(30, ge=0)


# --- tool results --------------------------------------------------------------------------------------


class ToolFailure(Wire):
    """A tool's refusal: returned as a result, never raised into the caller's run."""

    status: Literal["error", "forbidden"]
    error: str
    run_id: str | None = None


class AttachmentFile(Wire):
    name: str
    bytes: int
    sha256: str


class AttachmentReceipt(Wire):
    """What was written for the child, as in ``.manifest.json``."""

    rel_dir: str
    count: int
    total_bytes: int
    files: list[AttachmentFile]


class SpawnResult(Wire):
    status: Literal["accepted"] = "accepted"
    run_id: str
    child_session_key: str
    mode: Literal["run", "session"]
    note: str
    attachments: AttachmentReceipt | None = None


class AgentRow(Wire):
    id: str
    name: str | None = None
    configured: bool


class AgentsListResult(Wire):
    requester: str
    allow_any: bool
    agents: list[AgentRow]


class AgentsListParams(Params):
    pass


class SessionRow(SessionFacts):
    key: str
    kind: SessionKind
    channel: str
    updated_at: int
    session_id: str
    transcript_path: str | None = None
    messages: list[dict[str, Any]] | None = None


class SessionsListResult(Wire):
    count: int
    sessions: list[SessionRow]


class SessionsHistoryResult(Wire):
    session_key: str
    messages: list[dict[str, Any]]
    truncated: bool
    dropped_messages: int
    content_truncated: bool
    content_redacted: bool
    bytes: int


class DeliveryStatus(Wire):
    status: Literal["pending", "delivered", "failed", "skipped", "blocked"]
    mode: Literal["announce"] = "announce"


class SendResult(Wire):
    run_id: str
    status: Literal["accepted", "ok", "timeout", "error"]
    session_key: str
    reply: str | None = None
    error: str | None = None
    delivery: DeliveryStatus | None = None
    flow_id: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> SendResult:
        if self.status in ("timeout", "error") and not self.error:
            raise ValueError(f"a {self.status} result needs an error text")
        return self


# --- the fleet -----------------------------------------------------------------------------------------


class FleetStatus(Wire):
    """``GET /v1/status`` (``clawbus status``): what the whole fleet is doing now."""

    queues: dict[str, int]  # messages waiting, by queue
    workers: list[str]  # node names with a live heartbeat
    busy_lanes: int  # sessions with a run queued or running
    flows_in_progress: int
    reaper_ran_at: int | None = None  # ms
    runs_created: dict[str, int] = {}  # by kind, since the deployment began
    runs_finished: dict[str, int] = {}  # by "<kind>:<status>"
    deliveries: dict[str, int] = {}  # by final state
