"""clawbus's work run inline, without Celery or a worker: for tests of the domain, and of code built on it.

``world(config)`` is a whole clawbus in one process: the Redis adapter on an in-memory Redis (fakeredis,
which runs the store's Lua scripts), a ``FixedClock``, and an ``InlineDispatcher`` in Celery's place. Runs
are enqueued the way they are in production: the accept script pushes a lane head's message onto the
queue itself, and a later head is pushed by ``dispatch_run``; ``drain`` takes them off that queue and runs
them, then the flow steps, through the functions the tasks call (``workers.lanes``,
``shared.flows.engine.perform``), and a delivery that asks for a retry is tried again after its backoff
(the clock moves on by it). What dramatiq's stub broker and arq's burst worker are to their users.

    w = world({"agents": {"list": [{"id": "main", "default": True}]}})
    TOOLS["sessions_send"].invoke(w.context("main"), {...})   # a tool called as session "main"
    w.drain()        # every run, flow step and delivery, until nothing is left

What the repository's own tests run on real processes (redis-server, workers, a fake model server) is not
shipped: docs/testing.md describes both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import fakeredis
from redis import Redis

from clawbus.shared.base.clock import Clock, FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import Enqueue, LaneHead
from clawbus.shared.flows.engine import perform
from clawbus.shared.ports.context import Context
from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.runner.execution import Attempt, AttemptResult
from clawbus.shared.store import Store
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.workers import lanes
from clawbus.workers.services import WorkerContext

OWNER = "inline"
# The inline broker's queue: one list, so the runs of every kind come off it in the order they went on.
QUEUE = "inline:lane-heads"


class InlineDispatcher:
    """The ``Dispatcher`` port on a Redis list (the queue a worker would consume) for run heads, and a list
    of flow steps (task, flow, turn), in order."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self.steps: list[tuple[StepTask, str, int | None]] = []
        # Runs dispatched with a delay (a collect run's window): drain moves a FixedClock on by it.
        self.delays: dict[str, float] = {}
        # A2A tasks whose push notifications were asked to go, in order.
        self.notified: list[str] = []

    def dispatch_run(self, head: LaneHead, delay_s: float = 0.0) -> None:
        self._redis.lpush(QUEUE, _message(head))
        if delay_s > 0:
            self.delays[head.run_id] = delay_s

    def render_run(self, head: LaneHead) -> Enqueue | None:
        # The accept script pushes it when the run is its lane's head, as it pushes Celery's message.
        return Enqueue(QUEUE, _message(head))

    def step(self, task: StepTask, flow_id: str, turn: int | None = None) -> None:
        self.steps.append((task, flow_id, turn))

    def notify(self, run_id: str) -> None:
        self.notified.append(run_id)

    @property
    def heads(self) -> list[LaneHead]:
        """The run heads waiting on the queue, the next one first."""
        queued: list[str] = self._redis.lrange(QUEUE, 0, -1)
        return [_head(message) for message in reversed(queued)]

    def take_head(self) -> LaneHead | None:
        """The next run head off the queue, as a worker takes it."""
        message: str | None = self._redis.rpop(QUEUE)
        return _head(message) if message is not None else None

    def drop_heads(self) -> None:
        """Forget every queued run head (a test that plays the worker itself)."""
        self._redis.delete(QUEUE)


def _message(head: LaneHead) -> str:
    return json.dumps([head.run_id, head.session_key, head.kind, head.flow_id])


def _head(message: str) -> LaneHead:
    run_id, session_key, kind, flow_id = json.loads(message)
    return LaneHead(run_id, session_key, kind, flow_id)


@dataclass(frozen=True)
class World(Context):
    """A clawbus in one process (``world``): a ``Context`` on the in-memory Redis, with the adapter, the
    inline dispatcher and the clock as themselves, so a test reaches their test-only parts."""

    store: Store
    dispatcher: InlineDispatcher
    # A FixedClock, moved only when told to, unless the world was built on another (an API's waits need
    # time to pass).
    clock: Clock

    def context(self, caller: str = "main") -> ToolContext:
        """A tool call's context as ``caller`` (a session key as a client writes it) makes it."""
        return ToolContext.for_caller(self, caller)

    def drain(self, follow_inline: bool = False) -> list[str]:
        return drain(self, follow_inline)

    def drain_runs(self) -> list[AttemptResult]:
        return drain_runs(self)


def world(
    config: Config | Mapping[str, Any] | None = None,
    *,
    clock: Clock | None = None,
    redis: Redis | None = None,
) -> World:
    """A clawbus on an in-memory Redis of its own (``redis``: one a test shares with an API), with a clock
    that moves only when told to (``clock``: another). ``config`` is a ``Config`` or the data of a
    configuration file."""
    settings = config if isinstance(config, Config) else Config.model_validate(dict(config or {}))
    client = redis if redis is not None else fakeredis.FakeRedis(decode_responses=True)
    moved_by_hand = clock or FixedClock()
    return World(settings, Store(client, settings, moved_by_hand), InlineDispatcher(client), moved_by_hand)


def drain_runs(world: World) -> list[AttemptResult]:
    """Execute the runs dispatched, and the runs they dispatch, in order; flow steps are left queued (a
    run task's own following of its flow is off here: ``drain(..., follow_inline=True)`` has it)."""
    ctx = WorkerContext(world.config, world.store, world.dispatcher, follow_inline=False)
    results = []
    while (head := world.dispatcher.take_head()) is not None:
        results.append(_run(ctx, head))
    return results


def drain(world: World, follow_inline: bool = False) -> list[str]:
    """Everything a worker fleet would do, until nothing is left: runs first, then flow steps, each as its
    task would do it. Returns what ran, in order (``run:<kind>``, ``<step>`` or ``reply_turn:<turn>``).

    By default every step goes through its own task, so a test sees each; with ``follow_inline`` a run
    task performs its flow's next step itself, as workers do (the runs it starts then run inside it and
    are not listed). A delivery attempt that asks for a retry is queued again, as its task retries with a
    countdown; on a ``FixedClock`` the clock moves on by the backoff first."""
    dispatcher = world.dispatcher
    ctx = WorkerContext(world.config, world.store, dispatcher, follow_inline=follow_inline)
    done: list[str] = []
    while True:
        head = dispatcher.take_head()
        if head is not None:
            _run(ctx, head)
            done.append(f"run:{head.kind}")
            continue
        if not dispatcher.steps:
            return done
        task, flow_id, turn = dispatcher.steps.pop(0)
        done.append(task.value if turn is None else f"{task.value}:{turn}")
        retry_in = perform(lanes.flow_context(ctx), task, flow_id, OWNER).retry_in
        if retry_in is not None:
            if isinstance(world.clock, FixedClock):
                world.clock.advance(retry_in)
            dispatcher.step(task, flow_id, turn)


def _run(ctx: WorkerContext, head: LaneHead) -> AttemptResult:
    delay = (
        ctx.dispatcher.delays.pop(head.run_id, 0.0) if isinstance(ctx.dispatcher, InlineDispatcher) else 0.0
    )
    if delay and isinstance(ctx.store.clock, FixedClock):
        ctx.store.clock.advance(delay)
    result, _inline = lanes.execute_lane(ctx, Attempt(head.run_id, head.session_key, OWNER, 0), 0.0)
    return result
