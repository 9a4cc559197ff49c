"""workers/lanes.py: a run task goes on with its session's queued runs while its lane budget lasts."""

from __future__ import annotations

from shared.config import Config
from shared.execution import Attempt
from shared.inbound import receive
from shared.models import InboundMessageParams, RunStatus
from shared.store import Store
from shared.tools.context import ToolContext
from workers.context import WorkerContext
from workers.lanes import execute_lane
from workers.testing import InlineDispatcher

SESSION = "agent:main:cron:lane"


def queue_three(config: Config, store: Store, dispatcher: InlineDispatcher) -> Attempt:
    ctx = ToolContext.for_caller(config, store, dispatcher, SESSION)
    for text in ("one", "two", "three"):
        receive(ctx, InboundMessageParams(message=text, timeout_seconds=0))
    [head] = dispatcher.heads  # only the first was enqueued: the others wait in the lane
    dispatcher.heads.clear()
    return Attempt(head.run_id, head.session_key, owner=head.run_id, attempt=0)


def transcript(store: Store) -> list[str]:
    return [message.text for message in store.transcripts.last(SESSION, 10)]


def test_with_budget_left_the_queued_runs_of_the_session_run_in_the_same_task(
    config: Config, store: Store, dispatcher: InlineDispatcher
) -> None:
    attempt = queue_three(config, store, dispatcher)
    worker = WorkerContext(config, store, dispatcher)
    first, inline = execute_lane(worker, attempt, budget_s=60.0)
    assert first.status == RunStatus.OK
    assert inline == 2
    assert dispatcher.heads == []  # nothing was left to enqueue
    assert transcript(store) == ["one", "echo: one", "two", "echo: two", "three", "echo: three"]


def test_with_no_budget_the_next_run_is_enqueued_as_its_own_task(
    config: Config, store: Store, dispatcher: InlineDispatcher
) -> None:
    attempt = queue_three(config, store, dispatcher)
    worker = WorkerContext(config, store, dispatcher)
    _first, inline = execute_lane(worker, attempt, budget_s=0.0)
    assert inline == 0
    [next_head] = dispatcher.heads
    assert next_head.session_key == SESSION
    assert transcript(store) == ["one", "echo: one"]
    execute_lane(worker, Attempt(next_head.run_id, SESSION, owner=next_head.run_id, attempt=0), 0.0)
    assert transcript(store)[2:] == ["two", "echo: two"]
