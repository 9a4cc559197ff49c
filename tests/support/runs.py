"""Run records for tests that need one without running it, a run's steps through the store (accept,
claim, commit) for tests of those steps, and a run the stall watchdog reports."""

from __future__ import annotations

import uuid

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import Accepted, Claim, Committed, Ending, NewRun, Outcome
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.store import Store
from clawbus.shared.wire.models import Message, Run, RunStatus, StalledRun, Usage


def a_run(run_id: str, status: RunStatus) -> Run:
    """A send's run of ``agent:main:main`` in ``status`` (one that ended ok replied "done")."""
    return Run(
        run_id=run_id,
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        status=status,
        seq=1,
        created_at=1,
        reply="done" if status is RunStatus.OK else None,
    )


KEY = "agent:main:webchat:direct:ann"  # the session the helpers below use
LEASE_MS = 3000


def accept(store: Store, config: Config, text: str = "hi", key: str = KEY) -> Accepted:
    """A chat run of ``key`` with ``text``, accepted (its session made if new)."""
    run_id = str(uuid.uuid4())
    message = Message.of("user", text, timestamp=store.clock.now_ms(), run_id=run_id)
    new = NewRun(run_id=run_id, session_key=key, agent_id="main", kind="chat", input=message)
    return store.runs.accept(new_entry(config, key, store.clock.now_ms()), {}, new)


def claim(
    store: Store,
    run_id: str,
    owner: str = "task-1",
    attempt: int = 0,
    max_attempts: int = 3,
    key: str = KEY,
) -> Claim:
    """A claim of a run of ``key`` by ``owner``'s ``attempt``."""
    return store.runs.claim(
        run_id, key, owner=owner, attempt=attempt, lease_ms=LEASE_MS, max_attempts=max_attempts
    )


def ok(store: Store, run_id: str, token: str, reply: str = "done") -> Committed:
    """The run holding ``token`` ends ok with ``reply``."""
    run = store.runs.get(run_id)
    assert run is not None
    message = Message.of("assistant", reply, timestamp=store.clock.now_ms(), run_id=run_id)
    outcome = Outcome(RunStatus.OK, reply=reply, usage=Usage(input_tokens=3, output_tokens=2, cost_usd=0.5))
    return store.runs.commit(run, store.sessions.get(run.session_key), token, Ending(outcome, [message]))


HOUR_MS = 3_600_000


def stalled(store: Store, config: Config, key: str = "agent:main:cron:stuck") -> StalledRun:
    """A run of ``key`` claimed an hour ago (by the store's clock) under a two-hour lease, silent since: the
    stall watchdog's look (a one-minute bound) reports it."""
    past = Store(store.redis, config, clock=FixedClock(store.clock.now_ms() - HOUR_MS))
    accepted = accept(past, config, key=key)
    past.runs.claim(accepted.run_id, key, owner="task-stuck", attempt=0, lease_ms=2 * HOUR_MS, max_attempts=3)
    [found] = store.runs.watch_stalls(60_000).fresh
    return found
