"""The agent runtime protocol: one model step over a session's messages."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.domain.chains import Chain
from clawbus.shared.wire.models import Message, Sampling, SessionEntry, ThinkingLevel, ToolCallBlock, Usage

# Exact replies that end the reply-back loop or silence an announce (docs/contract.md §4, 6).
REPLY_SKIP = "REPLY_SKIP"
ANNOUNCE_SKIP = "ANNOUNCE_SKIP"
# The silent reply: a turn that has nothing to say to anyone (a relay of a report nobody needs to hear).
NO_REPLY = "NO_REPLY"
SKIP_TOKENS = frozenset({REPLY_SKIP, ANNOUNCE_SKIP})


class CancelSignal(threading.Event):
    """A run's cancel: an event that, when set, also calls the hang-ups registered on it. A model call
    blocked on a silent stream (a model thinking before its first token) then stops at once, where
    checking the event between chunks would wait for the next chunk."""

    def __init__(self) -> None:
        super().__init__()
        self._hooks_lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []

    def set(self) -> None:
        super().set()
        with self._hooks_lock:
            hooks = list(self._hooks)
        for hook in hooks:
            hook()

    @contextmanager
    def on_set(self, hook: Callable[[], None]) -> Iterator[None]:
        """``hook`` is called if the signal is set while the block runs (or was already). It may be called
        twice when the two race, and must not raise."""
        with self._hooks_lock:
            self._hooks.append(hook)
        try:
            if self.is_set():
                hook()
            yield
        finally:
            with self._hooks_lock:
                self._hooks.remove(hook)


@dataclass(frozen=True, slots=True)
class CallTicket:
    """One admitted model call: its place in its model's counts, and what it reserved of the budgets."""

    traffic: str
    usd_micros: int
    tokens: int


class CallGate(Protocol):
    """What a model call passes before it is sent and reports to after (``shared.runner.model_gate``)."""

    def output_cap(self) -> int | None:
        """The output cap the call asks for (its reservation assumed it); None: none."""

    def admit(self, body: Mapping[str, Any]) -> CallTicket:
        """Wait for the call's turn; ``BudgetExceeded``, ``AwaitingCapacity``, ``RunTimedOut`` or
        ``RunCancelled`` instead when it may not go."""

    def settle(self, ticket: CallTicket, usage: Usage | None, headers: Mapping[str, str]) -> None:
        """The call is over (``usage`` None: it failed)."""

    def rate_limited(self, ticket: CallTicket, headers: Mapping[str, str], backoff_s: float) -> None:
        """The provider refused the call for its rate limit."""


@dataclass(frozen=True, slots=True)
class StepRequest:
    agent_id: str
    model: str
    session: SessionEntry | None
    # The transcript tail (``history_window`` long), oldest first, ending with this run's input.
    messages: list[Message]
    # Extra system text for this run only (the agent-to-agent context).
    context: str | None = None
    # The functions the model may call, as OpenAI-compatible function schemas
    # (``shared.runner.tool_schemas``): handed in, so a runtime never reaches into the tool registry.
    tool_schemas: list[dict[str, Any]] = field(default_factory=list)
    # Seconds this step may take before the run ends ``timeout`` (a sub-agent's runTimeoutSeconds).
    time_limit: float | None = None
    thinking: ThinkingLevel | None = None
    # Called with each piece of reply text as it streams in (it lands in the run's event stream).
    on_text: Callable[[str], None] | None = None
    # Called when a step starts over after text was streamed (a retried request): that text is void.
    on_restart: Callable[[], None] | None = None
    # Set when the run is cancelled: the step stops (``RunCancelled``), at once where the runtime hangs up
    # on its model through ``CancelSignal.on_set``, else at its next streamed chunk.
    cancel: threading.Event | None = None
    # The gate of the run's model calls (budgets, the model's limits across the fleet); None: none.
    gate: CallGate | None = None
    # The token cap and sampling the run's requester asked for (an OpenAI-compatible request's); None: the
    # model's own.
    sampling: Sampling | None = None
    # The run's chain (shared/domain/chains.py): a runtime that reaches another host passes it on.
    chain: Chain | None = None

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


class RunTimedOut(ClawbusError):
    """A runtime gave up because ``time_limit`` ran out."""


class RunCancelled(ClawbusError):
    """The run was cancelled mid-step; ``partial`` is the text the model had written by then."""

    def __init__(self, partial: str = "") -> None:
        super().__init__("run aborted")
        self.partial = partial


class StepResult(BaseModel):
    """What one model step produced: text, and the tools it wants called before it speaks again."""

    reply: str
    usage: Usage = Field(default_factory=Usage)
    tool_calls: list[ToolCallBlock] = Field(default_factory=list)
    # The provider's id of this answer, when it gives one.
    response_id: str | None = None


class AgentRuntime(Protocol):
    # How many transcript messages a step reads (1: only this run's input). Loading is not free: a
    # runtime that reads less than the whole window says so.
    history_window: int
    # Asked again, it answers the same at no cost (the built-in runtimes): a run's final state then needs no
    # memo ahead of its commit, which only spares a retried attempt a paid model call.
    repeatable: bool

    def step(self, request: StepRequest) -> StepResult: ...
