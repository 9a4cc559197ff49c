"""Executing one attempt of a run: claim, run the agent loop, commit (or park the run on a wait).

Built for at-least-once delivery: any number of attempts of the same run may arrive (redelivery, retries
after a lost worker, the reaper, the wake-up of a parked run), in any order. The claim lets exactly one
execute at a time, the memoized loop state keeps a retried attempt from asking the model twice, and the
fenced commit lets only the lease holder finish.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

from opentelemetry.trace import Span

from clawbus.shared.a2a import push
from clawbus.shared.adapters import tracing
from clawbus.shared.adapters.runtimes.registry import history_window_of, runtime_for
from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import Config, OpenAIProvider, UnknownModel
from clawbus.shared.domain import chains, logs, subagents
from clawbus.shared.domain.budgets import BudgetExceeded
from clawbus.shared.domain.runs import (
    Claim,
    ClaimOutcome,
    Committed,
    Ending,
    ExecutionState,
    LaneHead,
    Memo,
    Outcome,
    SuspendOutcome,
)
from clawbus.shared.domain.traffic import CallClose
from clawbus.shared.flows import hot_window
from clawbus.shared.ports.context import Context
from clawbus.shared.ports.runtime import RunCancelled, RunTimedOut, StepRequest
from clawbus.shared.ports.storage import Storage
from clawbus.shared.ports.storage.transcripts import Transcripts
from clawbus.shared.runner import agent_loop, cancellation, leases
from clawbus.shared.runner.agent_loop import LoopState, StepsExhausted
from clawbus.shared.runner.leases import LeaseLost
from clawbus.shared.runner.model_gate import AwaitingCapacity, ModelGate, NoCapacity, root_of
from clawbus.shared.runner.tool_schemas import tool_schemas
from clawbus.shared.runner.visible_text import visible
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import Message, Run, RunKind, RunStatus, SessionEntry

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Attempt:
    run_id: str
    session_key: str
    # The Celery task id and its retry count: a later retry of the same task may take over a dead lease.
    owner: str
    attempt: int


@dataclass(frozen=True, slots=True)
class AttemptResult:
    outcome: ClaimOutcome
    status: RunStatus | None = None
    next_head: LaneHead | None = None
    # The flow the committed run belongs to: it has to be advanced now.
    flow_id: str | None = None
    kind: RunKind | None = None
    # Runs that were suspended waiting for this one: enqueue them, they resume.
    wake: list[LaneHead] = field(default_factory=list)
    # The run parked on a tool call's wait, or for model capacity; it is not over.
    suspended: bool = False
    # EARLY, or parked for model capacity: dispatch the run again this much later.
    retry_in_ms: int = 0
    # What ended the run, when it did not end ok.
    error: str | None = None


_LOST: Literal["lost"] = "lost"


@dataclass(frozen=True, slots=True)
class _Finished:
    outcome: Outcome
    messages: list[Message]
    memo: str | None = None
    context_tokens: int | None = None
    # What the reply's step left to send, sent with the commit (one round trip, not three).
    left: _Left | None = None


@dataclass(frozen=True, slots=True)
class _Left:
    """The last model call's settling, the text it streamed that is not on the run's stream yet, and
    whether the run's runtime answers again the same at no cost (``AgentRuntime.repeatable``)."""

    closing: CallClose | None
    events: tuple[dict[str, str], ...]
    repeatable: bool = False


def execute(ctx: Context, attempt: Attempt) -> AttemptResult:
    store, config = ctx.store, ctx.config
    # No flow until the run says which: the task may be another run's, or a flow step's.
    with logs.bound(run_id=attempt.run_id, session_key=attempt.session_key, flow_id=None):
        lease_ms = int(config.runs.lease_seconds * 1000)
        claim = store.runs.claim(
            attempt.run_id,
            attempt.session_key,
            owner=attempt.owner,
            attempt=attempt.attempt,
            lease_ms=lease_ms,
            max_attempts=config.runs.max_attempts,
            gate_places=config.agents.defaults.subagents.max_concurrent,
            tail=_tail_size(config, attempt.session_key),
        )
        if claim.state is None:
            return AttemptResult(claim.outcome, retry_in_ms=claim.retry_in_ms)
        run = claim.state.run
        with (
            logs.bound(flow_id=run.flow_id),
            tracing.agent_run(run, claim.attempts, store.clock.now_ms()) as span,
        ):
            if claim.attempts > 1:
                tracing.taken_over(span, claim.attempts)
            result = _claimed(ctx, attempt, claim, claim.state, lease_ms)
            _trace_outcome(span, result)
            return result


def _trace_outcome(span: Span, result: AttemptResult) -> None:
    if result.suspended:
        span.set_attribute("clawbus.run.status", "parked")
    elif result.outcome is ClaimOutcome.BUSY:
        tracing.lease_lost(span, "another attempt owns the run")
    elif result.status is not None:
        tracing.run_ended(span, result.status.value, result.error)


def _claimed(
    ctx: Context, attempt: Attempt, claim: Claim, state: ExecutionState, lease_ms: int
) -> AttemptResult:
    store, config, dispatcher = ctx.store, ctx.config, ctx.dispatcher
    loop = LoopState.model_validate_json(state.memo) if state.memo else LoopState()
    with (
        leases.kept(store, attempt.session_key, claim.token, lease_ms) as lease,
        cancellation.watching(store, attempt.run_id, state.run.cancel_requested) as cancel,
    ):
        finished = _run_agent(_Held(config, store, dispatcher, claim, state, lease, cancel), loop)
    if isinstance(finished, _Parked):
        return AttemptResult(
            ClaimOutcome.CLAIMED, suspended=True, kind=state.run.kind, retry_in_ms=finished.due_in_ms
        )
    if finished == _LOST:
        return AttemptResult(ClaimOutcome.BUSY)
    run = state.run
    committed = _commit(store, state, claim.token, finished)
    if not committed.committed:
        log.warning("run %s: lease lost before commit; another attempt owns it", attempt.run_id)
        return AttemptResult(ClaimOutcome.BUSY)
    assert isinstance(finished, _Finished)
    push.run_ended(store, dispatcher, run.run_id, run.session_key)
    hot_window.after_commit(config, store, state.session, committed.hot_length)
    return AttemptResult(
        ClaimOutcome.CLAIMED,
        finished.outcome.status,
        committed.next_head,
        run.flow_id,
        run.kind,
        wake=committed.waiters,
        error=finished.outcome.error,
    )


def _commit(store: Storage, state: ExecutionState, token: str, finished: _Finished) -> Committed:
    left = finished.left or _Left(None, ())
    ending = Ending(finished.outcome, finished.messages, finished.memo, finished.context_tokens, left.events)
    if left.closing is None:
        return store.runs.commit(state.run, state.session, token, ending)
    return store.calls.close_and_commit(left.closing, state.run, state.session, token, ending)


@dataclass(frozen=True, slots=True)
class _Held(Context):
    """A claimed run, while this attempt holds its lease: what running its agent needs."""

    claim: Claim
    state: ExecutionState
    lease: leases.LeaseHandle
    # Set when the run is cancelled while this attempt runs it.
    cancel: threading.Event


def _run_agent(held: _Held, loop: LoopState) -> _Finished | _Parked | Literal["lost"]:
    """What to commit; or the run was parked (on a tool call's wait, or for model capacity); or this
    attempt lost its lease."""
    run, claim = held.state.run, held.claim
    if claim.outcome is ClaimOutcome.EXHAUSTED:
        error = f"run abandoned after {claim.attempts - 1} attempts: its worker was lost each time"
        return _Finished(Outcome(RunStatus.ERROR, error=error), [])
    if run.kind == "note":  # recorded in turn, nothing for an agent to do
        return _Finished(Outcome(RunStatus.OK), [])
    memo_stored = loop.final is not None
    left = None
    # Whatever the loop already did (tool calls, their results) is recorded even if the run then fails.
    try:
        if not memo_stored:  # a memoized final state is committed as it is, without a runtime
            left = _run_to_reply(held, loop)
    except _Parked as parked:
        return parked
    except LeaseLost as exc:
        log.warning("%s; another attempt owns it", exc)
        return _LOST
    except RunCancelled as exc:
        log.info("run %s aborted: it was cancelled", run.run_id)
        messages = agent_loop.aborted(loop, run.run_id, held.store.clock.now_ms(), exc.partial)
        asked = held.store.runs.get(run.run_id)  # the cancel came after the claim read the run
        error = (asked.cancel_reason if asked else None) or "run aborted"
        outcome = Outcome(RunStatus.ABORTED, reply=exc.partial or None, error=error, usage=loop.usage)
        return _Finished(outcome, messages)
    except RunTimedOut as exc:
        assert run.timeout_ms is not None
        error = f"the run exceeded runTimeoutSeconds={run.timeout_ms / 1000:g} ({exc})"
        return _Finished(Outcome(RunStatus.TIMEOUT, error=error, usage=loop.usage), loop.messages)
    except (StepsExhausted, BudgetExceeded, NoCapacity) as exc:
        return _Finished(Outcome(RunStatus.ERROR, error=str(exc), usage=loop.usage), loop.messages)
    except Exception as exc:  # the agent failed, not the worker: the run ends in error, the lane moves on
        log.exception("run %s: agent runtime failed", run.run_id)
        error = f"{type(exc).__name__}: {exc}"
        return _Finished(Outcome(RunStatus.ERROR, error=error, usage=loop.usage), loop.messages)
    reply = visible(loop.final or "")
    return _Finished(
        Outcome(RunStatus.OK, reply=reply, usage=loop.usage),
        loop.messages,
        # Memoized ahead of the commit, so a retried attempt pays no model call again; a repeatable
        # runtime's answer costs nothing to ask again (a Redis script less a run).
        memo=None if memo_stored or (left is not None and left.repeatable) else loop.model_dump_json(),
        context_tokens=loop.context_tokens,
        left=left,
    )


class _Parked(ClawbusError):
    """The run is parked on a tool call's wait, or for model capacity (then it is dispatched again in
    ``due_in_ms``): nothing to commit."""

    def __init__(self, due_in_ms: int = 0) -> None:
        super().__init__()
        self.due_in_ms = due_in_ms


def _run_to_reply(held: _Held, loop: LoopState) -> _Left:
    """Run the loop to its final reply, and hand back what its last step left for the commit to send (its
    model call's settling, its streamed text); a wait parks the run (``_Parked``) unless what it waits for
    has already ended, and then the loop goes on at once."""
    env = _loop_env(held)
    run, token = held.state.run, held.claim.token
    while True:
        try:
            agent_loop.run_loop(env, loop)
        except AwaitingCapacity as waiting:
            env.settle()
            _park(held, loop, waiting)
        except BaseException:
            env.settle()  # a model call's settling is never left behind by a step that failed after it
            raise
        if loop.pending is None:
            return _Left(env.take_close(), env.take_events(), env.runtime.repeatable)
        env.settle()
        held.lease.pause()
        pending = loop.pending
        parked = held.store.runs.suspend(
            run, token, loop.model_dump_json(), pending.wait.run_id, pending.deadline_ms
        )
        if parked is SuspendOutcome.SUSPENDED:
            raise _Parked
        if parked is SuspendOutcome.FENCED:
            raise LeaseLost(f"run {run.run_id}: lease lost before it could park")
        if parked is SuspendOutcome.CANCELLED:
            raise RunCancelled()
        held.lease.resume()


def _park(held: _Held, loop: LoopState, waiting: AwaitingCapacity) -> None:
    """The run's model call waits long for capacity: the run gives its worker slot back until its turn."""
    run = held.state.run
    due_in_ms = max(int(waiting.wait_s * 1000), 1)
    held.lease.pause()
    due = held.store.clock.now_ms() + due_in_ms
    parked = held.store.runs.park(run, held.claim.token, loop.model_dump_json(), due)
    if parked is SuspendOutcome.FENCED:
        raise LeaseLost(f"run {run.run_id}: lease lost before it could park")
    if parked is SuspendOutcome.CANCELLED:
        raise RunCancelled()
    log.info("run %s parked for %d ms: %s", run.run_id, due_in_ms, waiting)
    raise _Parked(due_in_ms)


def _loop_env(held: _Held) -> agent_loop.LoopEnv:
    store, config, dispatcher, claim, state = held.store, held.config, held.dispatcher, held.claim, held.state
    run = state.run
    model = (state.session.model if state.session else None) or config.run_model(run.agent_id)
    runtime = runtime_for(config, model)
    tools = _tools(config, run.session_key, state.session)

    gate = _gate(held, model)

    def memo_of(loop: LoopState) -> Memo:
        return Memo(run, claim.token, loop.model_dump_json())

    def memoize(loop: LoopState) -> None:
        # The step's model call is settled in the memo's round trip (docs/capacity.md, figure 6).
        closing = gate.take_close() if gate is not None else None
        if closing is not None:
            stored = store.calls.close_and_memoize(closing, memo_of(loop))
        else:
            stored = store.runs.memoize(run, claim.token, loop.model_dump_json())
        if not stored:
            raise LeaseLost(f"run {run.run_id}: lease lost mid-loop")

    def memoize_later(loop: LoopState) -> None:
        # With the next call's admission, one round trip fewer a step (docs/capacity.md, figure 6).
        if gate is None:
            memoize(loop)
        else:
            gate.memoize_with_next(lambda: memo_of(loop))

    streamed = _TextEvents(store, run.run_id)

    request = StepRequest(
        agent_id=run.agent_id,
        model=model,
        session=state.session,
        messages=_history(store.transcripts, state, runtime.history_window),
        context=run.context,
        tool_schemas=tool_schemas("openai", tools),
        thinking=(state.session.thinking_level if state.session else None)
        or config.thinking_default(run.agent_id),
        on_text=streamed.write,
        on_restart=streamed.restart,
        cancel=held.cancel,
        gate=gate,
        sampling=run.sampling,
        chain=chains.of_run(run),
    )
    return agent_loop.LoopEnv(
        config=config,
        store=store,
        dispatcher=dispatcher,
        run=run,
        runtime=runtime,
        model=model,
        request=request,
        tools=tools,
        memoize=memoize,
        memoize_later=memoize_later,
        time_left=lambda: _time_left(store, run),
        text_done=streamed.flush,
        settle=gate.flush if gate is not None else _nothing,
        take_close=gate.take_close if gate is not None else _nothing,
        take_events=streamed.take,
    )


def _nothing() -> None:
    pass


def _gate(held: _Held, model: str) -> ModelGate | None:
    """The gate of the run's calls to an OpenAI-compatible provider (budgets and limits count real
    traffic; the built-in runtimes cost nothing)."""
    store, state = held.store, held.state
    try:
        provider, _ = held.config.provider(model)
    except UnknownModel:
        return None
    if not isinstance(provider, OpenAIProvider):
        return None
    run = state.run
    root = root_of(store.sessions, state.session) if session_keys.is_subagent(run.session_key) else None
    return ModelGate(
        store,
        held.config,
        run,
        model,
        root=root,
        cancel=held.cancel,
        time_left=lambda: _time_left(store, run),
    )


class _TextEvents:
    """Streamed reply text into the run's event stream, in pieces of at most ``FLUSH_SECONDS``: one write
    per token would cost a Redis round trip each."""

    FLUSH_SECONDS = 0.05

    def __init__(self, store: Storage, run_id: str) -> None:
        self._store, self._run_id = store, run_id
        self._pending: list[str] = []
        self._flushed = time.monotonic()
        self._written = False

    def write(self, text: str) -> None:
        if not self._written:
            self._written = True
            tracing.first_token()
        self._pending.append(text)
        if time.monotonic() - self._flushed >= self.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        for event in self.take():
            self._store.runs.add_event(self._run_id, event)
        self._flushed = time.monotonic()

    def take(self) -> tuple[dict[str, str], ...]:
        """The text event not sent yet (none, or one), for the caller to send."""
        if not self._pending:
            return ()
        event = {"type": "text", "text": "".join(self._pending)}
        self._pending.clear()
        return (event,)

    def restart(self) -> None:
        """The step's request is sent again: a follower drops the text it has of this step."""
        self._pending.clear()
        self._store.runs.add_event(self._run_id, {"type": "text_reset"})
        self._flushed = time.monotonic()


def _time_left(store: Storage, run: Run) -> float | None:
    """Counted from the run's first start: an attempt retried after a crash gets only what is left."""
    if not run.timeout_ms:
        return None
    started = run.started_at or store.clock.now_ms()
    return (started + run.timeout_ms - store.clock.now_ms()) / 1000


def _tools(config: Config, session_key: str, session: SessionEntry | None) -> list[str]:
    if session_keys.is_subagent(session_key):
        return subagents.tool_set(config, TOOLS, subagents.role_of(config, session_key, session))
    return sorted(TOOLS)


def _tail_size(config: Config, session_key: str) -> int:
    """How much of the transcript the claim reads for the run's agent: its model's window, when that reads
    further back than the run's input (a session's own model may read another: it is read then)."""
    try:
        window = history_window_of(config, config.run_model(session_keys.parse(session_key).agent_id))
    except (UnknownModel, session_keys.SessionKeyError):
        return 0
    return window if window > 1 else 0


def _history(transcripts: Transcripts, state: ExecutionState, window: int) -> list[Message]:
    """The input is on the run; the claim read the tail a runtime that reads further back needs (else, or
    when it ran into the cold part, the transcript is read here)."""
    if window <= 1 and state.input is not None:
        return [state.input]
    if state.tail is not None and state.tail_size == window:
        return state.tail
    return transcripts.last(state.run.session_key, max(window, 1))
