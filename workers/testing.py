"""clawbus's work run inline, without Celery or a broker: for tests of the domain, and of code built on it.

``InlineDispatcher`` stands where Celery does (the ``Dispatcher`` port) and queues what would be enqueued;
``drain`` executes it in order, as one worker would, through the same functions the tasks call
(``workers.lanes``, ``shared.flows.engine.perform``). What dramatiq's stub broker and arq's burst worker are
to their users.

    dispatcher = InlineDispatcher()
    ... call a tool or receive a message with it ...
    drain(store, config, dispatcher)        # every run, flow step and delivery, until nothing is left
"""

from __future__ import annotations

from dataclasses import dataclass, field

from shared.config import Config
from shared.dispatch import StepTask
from shared.execution import Attempt, AttemptResult
from shared.flows.engine import perform
from shared.runs import Enqueue, LaneHead
from shared.store import Store
from workers import lanes
from workers.context import WorkerContext

OWNER = "inline"


@dataclass
class InlineDispatcher:
    """Remembers what would have been enqueued, in order: run heads, and flow steps (task, flow, turn)."""

    heads: list[LaneHead] = field(default_factory=list)
    steps: list[tuple[StepTask, str, int | None]] = field(default_factory=list)

    def dispatch_run(self, head: LaneHead) -> None:
        self.heads.append(head)

    def render_run(self, head: LaneHead) -> Enqueue | None:
        return None  # the head is dispatched after its accept, into ``heads``

    def step(self, task: StepTask, flow_id: str, turn: int | None = None) -> None:
        self.steps.append((task, flow_id, turn))


def drain_runs(store: Store, config: Config, dispatcher: InlineDispatcher) -> list[AttemptResult]:
    """Execute the runs dispatched, and the runs they dispatch, in order; flow steps are left queued (a
    run task's own following of its flow is off here: ``drain(..., follow_inline=True)`` has it)."""
    ctx = WorkerContext(config, store, dispatcher, follow_inline=False)
    results = []
    while dispatcher.heads:
        results.append(_run(ctx, dispatcher.heads.pop(0)))
    return results


def drain(
    store: Store, config: Config, dispatcher: InlineDispatcher, follow_inline: bool = False
) -> list[str]:
    """Everything a worker fleet would do, until nothing is left: runs first, then flow steps, each as its
    task would do it. Returns what ran, in order (``run:<kind>``, ``<step>`` or ``reply_turn:<turn>``).

    By default every step goes through its own task, so a test sees each; with ``follow_inline`` a run
    task performs its flow's next step itself, as workers do (the runs it starts then run inside it and
    are not listed)."""
    ctx = WorkerContext(config, store, dispatcher, follow_inline=follow_inline)
    done: list[str] = []
    while dispatcher.heads or dispatcher.steps:
        if dispatcher.heads:
            head = dispatcher.heads.pop(0)
            _run(ctx, head)
            done.append(f"run:{head.kind}")
            continue
        task, flow_id, turn = dispatcher.steps.pop(0)
        done.append(task.value if turn is None else f"{task.value}:{turn}")
        # A failed delivery attempt would come back after its backoff; here the test decides.
        perform(lanes.flow_context(ctx), task, flow_id, OWNER)
    return done


def _run(ctx: WorkerContext, head: LaneHead) -> AttemptResult:
    result, _inline = lanes.execute_lane(ctx, Attempt(head.run_id, head.session_key, OWNER, 0), 0.0)
    return result
