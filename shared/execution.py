"""Executing one attempt of a run: claim, run the agent loop, commit (or park the run on a wait).

Built for at-least-once delivery: any number of attempts of the same run may arrive (redelivery, retries
after a lost worker, the reaper, the wake-up of a parked run), in any order. The claim lets exactly one
execute at a time, the memoized loop state keeps a retried attempt from asking the model twice, and the
fenced commit lets only the lease holder finish.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from shared import agent_loop, keys, logs, subagents
from shared.agent_loop import LoopState, StepsExhausted
from shared.config import Config
from shared.dispatch import Dispatcher
from shared.models import Message, Run, RunKind, RunStatus
from shared.runtime.base import RunTimedOut, StepRequest
from shared.runtime.registry import runtime_for
from shared.store import Store
from shared.store.runs import Claim, ClaimOutcome, ExecutionState, LaneHead, Outcome, SuspendOutcome
from shared.tools import TOOLS

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
    # The run parked on a tool call's wait; it is not over.
    suspended: bool = False
    # This attempt resumed a run that had been parked (so no link callback follows its task).
    resumed: bool = False


class LeaseLost(Exception):
    """Another attempt took the run over: this one stops without writing."""


_PARKED: Literal["parked"] = "parked"
_LOST: Literal["lost"] = "lost"


@dataclass(frozen=True, slots=True)
class _Finished:
    outcome: Outcome
    messages: list[Message]
    memo: str | None = None
    context_tokens: int | None = None


def execute(store: Store, config: Config, dispatcher: Dispatcher, attempt: Attempt) -> AttemptResult:
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
        )
        if claim.state is None:
            return AttemptResult(claim.outcome)
        with logs.bound(flow_id=claim.state.run.flow_id):
            return _claimed(store, config, dispatcher, attempt, claim, claim.state, lease_ms)


def _claimed(
    store: Store,
    config: Config,
    dispatcher: Dispatcher,
    attempt: Attempt,
    claim: Claim,
    state: ExecutionState,
    lease_ms: int,
) -> AttemptResult:
    loop = LoopState.model_validate_json(state.memo) if state.memo else LoopState()
    resumed = loop.pending is not None
    with _lease_kept(store, attempt.session_key, claim.token, lease_ms) as lease:
        finished = _run_agent(store, config, dispatcher, claim, state, loop, lease)
    if finished == _PARKED:
        return AttemptResult(ClaimOutcome.CLAIMED, suspended=True, resumed=resumed)
    if finished == _LOST:
        return AttemptResult(ClaimOutcome.BUSY)
    run = state.run
    committed = store.runs.commit(
        run,
        state.session,
        claim.token,
        finished.outcome,
        finished.messages,
        memo=finished.memo,
        context_tokens=finished.context_tokens,
    )
    if not committed.committed:
        log.warning("run %s: lease lost before commit; another attempt owns it", attempt.run_id)
        return AttemptResult(ClaimOutcome.BUSY)
    assert isinstance(finished, _Finished)
    return AttemptResult(
        ClaimOutcome.CLAIMED,
        finished.outcome.status,
        committed.next_head,
        run.flow_id,
        run.kind,
        wake=committed.waiters,
        resumed=resumed,
    )


def _run_agent(
    store: Store,
    config: Config,
    dispatcher: Dispatcher,
    claim: Claim,
    state: ExecutionState,
    loop: LoopState,
    lease: _LeaseHandle,
) -> _Finished | Literal["parked", "lost"]:
    """What to commit; or the run was parked on a tool call's wait; or this attempt lost its lease."""
    run = state.run
    if claim.outcome is ClaimOutcome.EXHAUSTED:
        error = f"run abandoned after {claim.attempts - 1} attempts: its worker was lost each time"
        return _Finished(Outcome(RunStatus.ERROR, error=error), [])
    if run.kind == "note":  # recorded in turn, nothing for an agent to do
        return _Finished(Outcome(RunStatus.OK), [])
    memo_stored = loop.final is not None
    # Whatever the loop already did (tool calls, their results) is recorded even if the run then fails.
    try:
        if not memo_stored:  # a memoized final state is committed as it is, without a runtime
            _advance(store, config, dispatcher, claim, state, loop, lease)
    except _Parked:
        return _PARKED
    except LeaseLost as exc:
        log.warning("%s; another attempt owns it", exc)
        return _LOST
    except RunTimedOut as exc:
        assert run.timeout_ms is not None
        error = f"the run exceeded runTimeoutSeconds={run.timeout_ms / 1000:g} ({exc})"
        return _Finished(Outcome(RunStatus.TIMEOUT, error=error, usage=loop.usage), loop.messages)
    except StepsExhausted as exc:
        return _Finished(Outcome(RunStatus.ERROR, error=str(exc), usage=loop.usage), loop.messages)
    except Exception as exc:  # the agent failed, not the worker: the run ends in error, the lane moves on
        log.exception("run %s: agent runtime failed", run.run_id)
        error = f"{type(exc).__name__}: {exc}"
        return _Finished(Outcome(RunStatus.ERROR, error=error, usage=loop.usage), loop.messages)
    reply = loop.final or ""
    return _Finished(
        Outcome(RunStatus.OK, reply=reply, usage=loop.usage),
        loop.messages,
        memo=None if memo_stored else loop.model_dump_json(),
        context_tokens=loop.context_tokens,
    )


class _Parked(Exception):
    """The run is parked on a tool call's wait: nothing to commit."""


def _advance(
    store: Store,
    config: Config,
    dispatcher: Dispatcher,
    claim: Claim,
    state: ExecutionState,
    loop: LoopState,
    lease: _LeaseHandle,
) -> None:
    """Run the loop to its final reply; a wait parks the run (``_Parked``) unless what it waits for has
    already ended, and then the loop goes on at once."""
    env = _loop_env(store, config, dispatcher, claim, state)
    while True:
        agent_loop.advance(env, loop)
        if loop.pending is None:
            return
        lease.pause()
        parked = store.runs.suspend(
            state.run, claim.token, loop.model_dump_json(), loop.pending.wait.run_id, loop.pending.deadline_ms
        )
        if parked is SuspendOutcome.SUSPENDED:
            raise _Parked
        if parked is SuspendOutcome.FENCED:
            raise LeaseLost(f"run {state.run.run_id}: lease lost before it could park")
        lease.resume()


def _loop_env(
    store: Store, config: Config, dispatcher: Dispatcher, claim: Claim, state: ExecutionState
) -> agent_loop.LoopEnv:
    run = state.run
    model = (state.session.model if state.session else None) or config.model_of(run.agent_id)
    runtime = runtime_for(config, model)
    tools = _tools(config, run.session_key)

    def memoize(loop: LoopState) -> None:
        if not store.runs.memoize(run, claim.token, loop.model_dump_json()):
            raise LeaseLost(f"run {run.run_id}: lease lost mid-loop")

    streamed = _TextEvents(store, run.run_id)

    request = StepRequest(
        agent_id=run.agent_id,
        model=model,
        session=state.session,
        messages=_history(store, state, runtime.history_window),
        context=run.context,
        tools=tools,
        thinking=state.session.thinking_level if state.session else None,
        on_text=streamed.write,
        on_restart=streamed.restart,
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
        time_left=lambda: _time_left(store, run),
        text_done=streamed.flush,
    )


class _TextEvents:
    """Streamed reply text into the run's event stream, in pieces of at most ``FLUSH_SECONDS``: one write
    per token would cost a Redis round trip each."""

    FLUSH_SECONDS = 0.05

    def __init__(self, store: Store, run_id: str) -> None:
        self._store, self._run_id = store, run_id
        self._pending: list[str] = []
        self._flushed = time.monotonic()

    def write(self, text: str) -> None:
        self._pending.append(text)
        if time.monotonic() - self._flushed >= self.FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._store.runs.add_event(self._run_id, {"type": "text", "text": "".join(self._pending)})
            self._pending.clear()
        self._flushed = time.monotonic()

    def restart(self) -> None:
        """The step's request is sent again: a follower drops the text it has of this step."""
        self._pending.clear()
        self._store.runs.add_event(self._run_id, {"type": "text_reset"})
        self._flushed = time.monotonic()


def _time_left(store: Store, run: Run) -> float | None:
    """Counted from the run's first start: an attempt retried after a crash gets only what is left."""
    if not run.timeout_ms:
        return None
    started = run.started_at or store.clock.now_ms()
    return (started + run.timeout_ms - store.clock.now_ms()) / 1000


def _tools(config: Config, session_key: str) -> list[str]:
    if keys.is_subagent(session_key):
        return subagents.tool_set(config, TOOLS)
    return sorted(TOOLS)


def _history(store: Store, state: ExecutionState, window: int) -> list[Message]:
    """The input is on the run; only a runtime that reads further back costs a transcript read."""
    if window <= 1 and state.input is not None:
        return [state.input]
    return store.transcripts.last(state.run.session_key, max(window, 1))


class _LeaseKeeper:
    """One thread per worker process renews the leases of the attempts that process is executing.

    Each lease is renewed a third of its length after the last renewal, so a step that finishes quickly
    never costs a heartbeat.
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self._leases: dict[str, _Lease] = {}
        self._wake = threading.Event()
        self._next_look = 0.0  # when the thread will look next (monotonic); 0 until it first sleeps
        threading.Thread(target=self._loop, name="clawbus-lease-keeper", daemon=True).start()

    def add(self, store: Store, session_key: str, token: str, lease_ms: int) -> None:
        due = time.monotonic() + lease_ms / 3000
        with self._lock:
            self._leases[token] = _Lease(store, session_key, token, lease_ms, due)
            # Waking the thread on every run would cost each run a GIL hand-off: only when this lease is
            # due before the thread means to look again.
            wake = due < self._next_look
        if wake:
            self._wake.set()

    def remove(self, token: str) -> None:
        with self._lock:
            self._leases.pop(token, None)

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            with self._lock:
                due = [lease for lease in self._leases.values() if lease.due <= now]
                for lease in due:
                    lease.due = now + lease.lease_ms / 3000
                self._next_look = min((lease.due for lease in self._leases.values()), default=now + 60)
                wait = self._next_look - now
            for lease in due:
                self._renew(lease)
            self._wake.wait(max(wait, 0.01))
            self._wake.clear()

    def _renew(self, lease: _Lease) -> None:
        with logs.bound(session_key=lease.session_key):
            self._heartbeat(lease)

    def _heartbeat(self, lease: _Lease) -> None:
        try:
            if not lease.store.runs.heartbeat(lease.session_key, lease.token, lease.lease_ms):
                log.warning(
                    "lease of %s was taken over; this attempt's commit will be refused", lease.session_key
                )
                self.remove(lease.token)
        except Exception:
            log.exception("lease heartbeat failed for %s", lease.session_key)


@dataclass(slots=True)
class _Lease:
    store: Store
    session_key: str
    token: str
    lease_ms: int
    due: float


_keeper: _LeaseKeeper | None = None
_keeper_lock = threading.Lock()


class _LeaseHandle:
    """An attempt's lease in the keeper; paused while the run parks (a parked lease must not be renewed)."""

    def __init__(
        self, keeper: _LeaseKeeper, store: Store, session_key: str, token: str, lease_ms: int
    ) -> None:
        self._keeper, self._args = keeper, (store, session_key, token, lease_ms)

    def resume(self) -> None:
        self._keeper.add(*self._args)

    def pause(self) -> None:
        self._keeper.remove(self._args[2])


@contextmanager
def _lease_kept(store: Store, session_key: str, token: str, lease_ms: int) -> Iterator[_LeaseHandle]:
    global _keeper
    with _keeper_lock:
        # Started lazily per process: Celery's prefork children do not inherit the parent's threads.
        if _keeper is None or _keeper.pid != os.getpid():
            _keeper = _LeaseKeeper()
        keeper = _keeper
    handle = _LeaseHandle(keeper, store, session_key, token, lease_ms)
    handle.resume()
    try:
        yield handle
    finally:
        handle.pause()
