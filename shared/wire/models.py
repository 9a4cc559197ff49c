"""The domain's data shapes, and the typed parameters and results of every tool.

camelCase on the wire (OpenClaw's names), snake_case in Python. These models are the edge: the HTTP API,
the CLI client and the stored hashes all go through them. A shape the thin client reads too has its fields
declared once, in ``clawbus_client.models``; its model here subclasses that one (see ``Wire``).
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from clawbus_client import models as client
from clawbus_client.models import RunStatus as RunStatus
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
)
from pydantic.alias_generators import to_camel

from clawbus.shared.base.session_keys import SessionKind
from clawbus.shared.base.text import CONTROL_CLASS, has_control_characters
from clawbus.shared.base.tool_args import list_required


class Wire(client.Model):
    # A shape the server writes: camelCase, absent fields omitted (``wire()``). One the thin client reads
    # too has its fields declared once, leniently, in ``clawbus_client.models``, and is
    # ``class X(client.X, Wire)`` here (``Wire`` last: its configuration wins), which only narrows what the
    # server promises (its closed sets, the fields it always writes, its own nested models: the published
    # schema is these) and adds what only the server does (validators, methods).

    # Shapes we emit: a client reading a newer server's output ignores fields it does not know yet.
    model_config = ConfigDict(extra="ignore", json_schema_extra=list_required)

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
    # A pydantic model (it copies mutable defaults), which ruff cannot see through ``client.Model``.
    arguments: dict[str, Any] = {}  # noqa: RUF012


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


class DeliveryContext(client.DeliveryContext, Wire):
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


class SessionFacts(client.SessionFacts, Wire):
    """What an entry and a ``sessions_list`` row both show."""

    thinking_level: ThinkingLevel | None = None
    send_policy: SendPolicyValue | None = None
    queue_mode: QueueMode | None = None
    delivery_context: DeliveryContext | None = None
    role: SpawnRole | None = None
    status: Literal["running", "done", "failed", "killed", "timeout"] | None = None


class SessionEntry(SessionFacts, client.SessionEntry, Wire):
    # Its stateVersion is counted by the scripts that make the changes, so a page of list rows reads it
    # with the entries.
    kind: SessionKind
    chat_type: Literal["direct", "group", "channel"] | None = None
    mode: Literal["run", "session"] | None = None
    cleanup: Literal["delete", "keep"] | None = None
    queue_drop: QueueDrop | None = None


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


# ``RunStatus`` is the client's (imported above): the same values, the same ``terminal``.

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


class Usage(client.Usage, Wire):
    """A run's tokens and cost; None where nothing says (a model that reported no usage, a model with no
    price configured). A sub-agent's report prints ``?`` for those (docs/contract.md §6)."""

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


class Sampling(client.Sampling, Wire):
    """What a client of the OpenAI-compatible endpoints asked of the model (its token cap and sampling), as
    the release hands them to every model call of the request's run (its ``streamParams``). Each is applied
    by runtimes that call a model (``shared.adapters.runtimes.openai``); validated at the edge."""

    def is_empty(self) -> bool:
        return not self.model_dump(exclude_none=True)


class RunSpec(client.RunSpec, Wire):
    """What a run is asked to be when it is accepted; a ``Run`` is that and how it went."""

    # Its chain (chainId, hops, chainPath): shared/domain/chains.py; its traceParent:
    # shared/base/trace_context.py.
    kind: RunKind
    sampling: Sampling | None = None


class Run(RunSpec, client.Run, Wire):
    """One agent turn in one session (docs/contract.md §8). Terminal states never change."""

    usage: Usage = Field(default_factory=Usage)
    # ``traceId``: the client's, read off ``traceParent`` as shared/base/trace_context.py reads it.


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


class Delivery(client.Delivery, Wire):
    """One outbound message to a chat channel, with its retries and final state."""

    status: DeliveryState


class DeliveryClaim(StrEnum):
    """What a delivery attempt's claim found."""

    CLAIMED = "claimed"
    BUSY = "busy"
    DONE = "done"
    MISSING = "missing"


class FlowStep(client.FlowStep, Wire):
    step: Literal["run", "reply_turn", "announce", "deliver", "relay"]


class Flow(client.Flow, Wire):
    """A sessions_send exchange: primary run, reply-back turns, announce, delivery (docs/contract.md §4).

    The flow id is the primary run's id; every later step's run and delivery id derive from it, so a step
    that runs twice finds its run already there.
    """

    # The chain's path: shared/domain/chains.py. A stopReason of a flow that ended off the normal path is
    # one of the FlowEndReason codes.
    kind: Literal["send", "spawn"] = "send"
    status: Literal["running", "done"]
    flow_timeout_ms: int = 3_600_000
    delivery_status: FlowDeliveryState | None = None
    cleanup: Literal["delete", "keep"] | None = None
    mode: Literal["run", "session"] | None = None
    completion_target: Literal["parent"] | None = None
    steps: list[FlowStep] = Field(default_factory=list)
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


class CommandReply(client.CommandReply, Wire):
    """The answer to a standalone chat command (``/send on``, ``/stop``, ``/queue``, ``/status``,
    ``/subagents``, ``/agents``, ``/session``; ``shared.commands``): handled by clawbus, no agent run.
    ``reply`` is what the command says (the release's words), ``error`` why it did nothing."""

    status: Literal["ok", "error"]


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


class ToolFailure(client.ToolFailure, Wire):
    """A tool's refusal: returned as a result, never raised into the caller's run."""

    # A chain guard's refusal: shared/domain/chains.py.
    status: Literal["error", "forbidden"]


# --- the fleet -----------------------------------------------------------------------------------------


class ColdMoveFailure(client.ColdMoveFailure, Wire):
    """The cold transcript store failing now: the last refused move's error and when (ms), and since when
    (ms: the first failure after a move last succeeded)."""


class StalledRun(client.StalledRun, Wire):
    """A run whose lease is renewed but that made no progress (no event, no memoized step) since ``since``
    (ms) for longer than ``runs.stallSeconds``: reported by the reaper's watchdog, not stopped. ``owner`` is
    its lease's holder (the attempt's task id), ``attempt`` its claims so far."""


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


class FleetStatus(client.FleetStatus, Wire):
    """``GET /v1/status`` (``clawbus status``): what the whole fleet is doing now."""

    cold_move_failure: ColdMoveFailure | None = None
    stalled_runs: list[StalledRun] = []  # noqa: RUF012 (a pydantic model, as ``arguments`` above)
