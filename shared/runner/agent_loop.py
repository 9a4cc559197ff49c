"""The agent loop of one run: model step -> tool calls -> tool results -> model step ... -> final text.

Its whole state (``LoopState``) is plain data memoized on the run after every model step, so an attempt
that dies mid-loop is resumed by the next one without asking the model again, and a tool call that waits
for another run parks the run (``pending``) instead of holding a worker slot: the awaited run's commit, or
the wait's deadline, brings it back here.

Tool calls create their runs with ids derived from the call, so a call made again after a lost worker
finds what the first one made.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from clawbus.shared.adapters import tracing
from clawbus.shared.base.errors import ClawbusError, ToolError, tool_input_error
from clawbus.shared.config import Config
from clawbus.shared.config.providers import ModelCost, OpenAIProvider
from clawbus.shared.domain import attachments
from clawbus.shared.domain.redaction import redact
from clawbus.shared.domain.runs import STEERABLE
from clawbus.shared.domain.traffic import CallClose
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.ports.dispatch import Dispatcher
from clawbus.shared.ports.runtime import AgentRuntime, RunCancelled, RunTimedOut, StepRequest, StepResult
from clawbus.shared.ports.storage import Storage
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Message, Run, TextBlock, ToolCallBlock, ToolFailure, Usage, Wire
from clawbus.shared.wire.yielding_schema import YieldResult

log = logging.getLogger(__name__)

# How much of a model's reply a debug line shows (redacted): enough to tell runs apart.
PREVIEW_CHARS = 80


class PendingWait(BaseModel):
    """A tool call waiting for a run to end."""

    call_id: str
    tool_name: str
    wait: AwaitRun
    deadline_ms: int


class LoopState(BaseModel):
    # What this run has said so far (assistant turns with tool calls, tool results, the final reply), not
    # yet in the transcript: the commit appends them all at once.
    messages: list[Message] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    steps: int = 0
    # The prompt size of the latest step: the session's contextTokens.
    context_tokens: int | None = None
    final: str | None = None
    pending: PendingWait | None = None
    # Steer messages taken in so far (``runs.absorb_steers``): a retry takes in only those after them.
    steers_taken: int = 0


class StepsExhausted(ClawbusError):
    """The model kept calling tools past runs.maxSteps."""


@dataclass(frozen=True, slots=True)
class LoopEnv:
    config: Config
    store: Storage
    dispatcher: Dispatcher
    run: Run
    runtime: AgentRuntime
    model: str
    request: StepRequest  # the first step's request; later steps add this run's messages to it
    tools: list[str]
    # Memoizes the loop state after a step that called tools (with its model call's settling).
    memoize: Callable[[LoopState], None]
    # The same once the step's tool calls, which only read, have run: with the next step's admission.
    memoize_later: Callable[[LoopState], None]
    # Seconds left of the run's time limit, asked before every step (None: no limit).
    time_left: Callable[[], float | None]
    # Called when a step is over: text still buffered for the event stream goes out.
    text_done: Callable[[], None]
    # The reply step's text still buffered, taken for the commit to send.
    take_events: Callable[[], tuple[dict[str, str], ...]]
    # Sends a model call's settling that still waits (a step that failed, or a run that parks).
    settle: Callable[[], None]
    # The last model call's settling, not sent: it goes to Redis with the run's commit.
    take_close: Callable[[], CallClose | None]
    # The arguments of this attempt's tool calls as the model wrote them, by call id, where what is
    # stored (memo, transcript) differs: a sessions_spawn call's attachment contents never are.
    raw_arguments: dict[str, dict[str, Any]] = field(default_factory=dict)


def run_loop(env: LoopEnv, state: LoopState) -> LoopState:
    """Run the loop until it has a final reply or a tool call must wait (``state.pending`` is then set)."""
    while True:
        if state.pending is not None and not _settle(env, state, state.pending):
            return state
        calls = unanswered(state)
        if calls:
            for call in calls:
                if env.request.cancelled():  # no tool call starts after a cancel
                    raise RunCancelled()
                result = _call(env, call, state.steps)
                if isinstance(result, AwaitRun):
                    deadline = env.store.clock.now_ms() + int(result.timeout_seconds * 1000)
                    state.pending = PendingWait(
                        call_id=call.id, tool_name=call.name, wait=result, deadline_ms=deadline
                    )
                    break
                state.messages.append(_tool_result(env, call, result))
                if isinstance(result, YieldResult):
                    _end_turn(env, state, str(call.arguments.get("message") or ""), "sessions_yield")
                    break
                if isinstance(result, ToolFailure) and result.guard is not None:
                    # A chain guard stopped the chain here: the refusal is the run's last word, with no
                    # model step after it that could try again (docs/contract.md §4, "Chains").
                    _end_turn(env, state, "", f"the chain guard ({result.guard})")
                    break
            continue
        if state.final is not None:
            return state
        _step(env, state)


def _end_turn(env: LoopEnv, state: LoopState, reply: str, by: str) -> None:
    """``sessions_yield`` or a chain guard ends the turn: calls made beside it are answered (a transcript
    with an unanswered call is one no model accepts back), and the run's reply is the yield's message (a
    guard's: none)."""
    ended = ToolFailure(status="error", error=f"not run: the turn ended with {by}")
    state.messages += [_tool_result(env, call, ended) for call in unanswered(state)]
    state.final = reply
    state.messages.append(
        Message.of("assistant", reply, timestamp=env.store.clock.now_ms(), run_id=env.run.run_id)
    )


def unanswered(state: LoopState) -> list[ToolCallBlock]:
    """The calls of the latest assistant turn that have no result yet, in order. Only the results after
    that turn count: some providers number their calls afresh each turn (``call_0`` every time)."""
    latest = next(
        (i for i in range(len(state.messages) - 1, -1, -1) if state.messages[i].role == "assistant"), None
    )
    if latest is None:
        return []
    after = state.messages[latest + 1 :]
    answered = {m.tool_call_id for m in after if m.role == "toolResult"}
    return [call for call in state.messages[latest].tool_calls if call.id not in answered]


def aborted(state: LoopState, run_id: str, now_ms: int, partial: str) -> list[Message]:
    """What a cancelled run commits: what it said before, an error result for every call it had not
    answered (a transcript with an unanswered call is one no model accepts back), and the text of the
    step it was cut off in, marked aborted."""
    refused = ToolFailure(status="error", error="run aborted")
    results = [tool_result(run_id, now_ms, call, refused) for call in unanswered(state)]
    cut = Message.of("assistant", partial, timestamp=now_ms, run_id=run_id)
    return [*state.messages, *results, cut.model_copy(update={"stop_reason": "aborted"})]


def _step(env: LoopEnv, state: LoopState) -> None:
    if state.steps >= env.config.runs.max_steps:
        raise StepsExhausted(
            f"the agent was still calling tools after {state.steps} model steps (runs.maxSteps)"
        )
    if env.request.cancelled():
        raise RunCancelled()
    if state.steps:  # a run's first step reads its input; steers reach the steps after it
        _take_steers(env, state)
    limit = env.time_left()
    if limit is not None and limit <= 0:
        raise RunTimedOut("no time was left when the step started")
    base = env.request
    request = dataclasses.replace(base, messages=[*base.messages, *state.messages], time_limit=limit)
    with tracing.model_step(env.config, env.model, env.run) as span:
        try:
            result = env.runtime.step(request)
        except BaseException:
            env.text_done()
            raise
        if result.tool_calls:  # a reply's text goes out with the run's commit (take_events)
            env.text_done()
        tracing.step_done(span, result.usage, len(result.tool_calls), result.reply)
    state.steps += 1
    state.usage = state.usage.plus(result.usage)
    state.context_tokens = result.usage.input_tokens or state.context_tokens
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "model step %d: %d tool call(s), reply %r",
            state.steps,
            len(result.tool_calls),
            redact(result.reply[:PREVIEW_CHARS])[0],
        )
    now = env.store.clock.now_ms()
    message = Message.of("assistant", result.reply, timestamp=now, run_id=env.run.run_id)
    _record_model(env, message, result)
    if result.tool_calls:
        texts = [TextBlock(text=result.reply)] if result.reply else []
        stored = [_storable(env, call) for call in result.tool_calls]
        message = message.model_copy(update={"content": [*texts, *stored]})
        state.messages.append(message)
        if all(_reads_only(call) for call in result.tool_calls):
            env.memoize_later(state)
        else:  # before a call that changes something runs: a retried attempt must not make it anew
            env.memoize(state)
        return
    state.final = result.reply
    state.messages.append(message)


# The release's names of the APIs a provider speaks (``api`` on an assistant message).
_API_OF_TYPE = {"openai": "openai-completions"}


def _record_model(env: LoopEnv, message: Message, result: StepResult) -> None:
    """Which model answered, and what the step cost, on the assistant message, as the release's transcript
    records them."""
    provider, _, model_id = env.model.partition("/")
    found = env.config.models.all_providers().get(provider)
    kind = getattr(found, "type", provider)
    message.api = _API_OF_TYPE.get(kind, kind)
    message.provider = provider
    message.model = model_id or provider
    message.response_id = result.response_id
    price = found.model(model_id).cost if isinstance(found, OpenAIProvider) and model_id else None
    message.usage = step_usage(result.usage, price)


def step_usage(usage: Usage, price: ModelCost | None) -> dict[str, Any]:
    """A step's tokens and cost as the release's transcript keeps them on the assistant message (a model
    with no price costs 0 there)."""
    tokens_in, tokens_out = usage.input_tokens or 0, usage.output_tokens or 0
    cost_in = tokens_in * price.input / 1_000_000 if price else 0.0
    cost_out = tokens_out * price.output / 1_000_000 if price else 0.0
    return {
        "input": tokens_in,
        "output": tokens_out,
        "totalTokens": tokens_in + tokens_out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "cost": {
            "input": cost_in,
            "output": cost_out,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": cost_in + cost_out,
        },
    }


def _take_steers(env: LoopEnv, state: LoopState) -> None:
    """Messages steered into this run while it ran (queued ``steer`` runs of its session) reach the model
    at this step, as user messages, in order; each once, a retried attempt included."""
    if env.run.kind not in STEERABLE:
        return
    absorbed = env.store.runs.absorb_steers(env.run.run_id, env.run.session_key)
    fresh = absorbed[state.steers_taken :]
    if not fresh:
        return
    for message in env.store.runs.inputs(fresh):
        if message is not None:
            state.messages.append(message)
    state.steers_taken = len(absorbed)


def _settle(env: LoopEnv, state: LoopState, pending: PendingWait) -> bool:
    """Turn a finished (or timed out) wait into its tool result; False while it must go on waiting."""
    seen = env.store.runs.get(pending.wait.run_id)
    ended = seen is not None and seen.status.terminal
    if seen is not None and not ended and env.store.clock.now_ms() < pending.deadline_ms:
        return False
    call = ToolCallBlock(id=pending.call_id, name=pending.tool_name)
    result = pending.wait.vanished() if seen is None else pending.wait.finish(seen if ended else None)
    state.messages.append(_tool_result(env, call, result))
    state.pending = None
    return True


def _reads_only(call: ToolCallBlock) -> bool:
    """Made again, the call doubles nothing (an unknown tool's is only an error result)."""
    tool = TOOLS.get(call.name)
    return tool is None or tool.reads_only


def _storable(env: LoopEnv, call: ToolCallBlock) -> ToolCallBlock:
    """The call as it may be stored; the arguments it runs with stay in ``env`` for this attempt."""
    if call.name != "sessions_spawn":
        return call
    redacted = attachments.redacted_args(call.arguments)
    if redacted is call.arguments:
        return call
    env.raw_arguments[call.id] = call.arguments
    return call.model_copy(update={"arguments": redacted})


def _call(env: LoopEnv, call: ToolCallBlock, step: int) -> Wire | AwaitRun:
    tool = TOOLS.get(call.name)
    if tool is None:
        return ToolFailure(
            status="error", error=f"Unknown tool: {call.name} (available: {', '.join(env.tools)})"
        )
    ctx = ToolContext(
        env.config,
        env.store,
        env.dispatcher,
        env.run.session_key,
        origin_run_id=env.run.run_id,
        owner=False,
        # The step too: a call id is unique in its turn only, and what the seed names (a spawned child's
        # session, say) must differ between turns and be the same when a retried attempt repeats the call.
        id_seed=f"{env.run.run_id}:{step}:{call.id}",
    )
    refused = tool.refusal(ctx)
    if refused is not None:
        return refused
    try:
        with tracing.tool_call(call.name, env.run.session_key, call.id, call.arguments):
            return tool.invoke(ctx, env.raw_arguments.get(call.id, call.arguments))
    except ValidationError as exc:
        return ToolFailure(status="error", error=tool_input_error(exc.errors())[1])
    except ToolError as exc:
        return ToolFailure(status="forbidden" if exc.status == "forbidden" else "error", error=exc.error)


def _tool_result(env: LoopEnv, call: ToolCallBlock, result: Wire) -> Message:
    return tool_result(env.run.run_id, env.store.clock.now_ms(), call, result)


def tool_result(run_id: str, now_ms: int, call: ToolCallBlock, result: Wire) -> Message:
    """The ``toolResult`` message answering ``call``, as OpenClaw's transcript has it."""
    message = Message.of("toolResult", result.content_text(), timestamp=now_ms, run_id=run_id)
    failed = isinstance(result, ToolFailure) or getattr(result, "status", None) in ("error", "forbidden")
    return message.model_copy(update={"tool_call_id": call.id, "tool_name": call.name, "is_error": failed})
