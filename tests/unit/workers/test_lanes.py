"""workers/lanes.py: a run task goes on with its session's queued runs while its lane budget lasts."""

from __future__ import annotations

from clawbus.shared.commands.inbound import receive
from clawbus.shared.config import Config
from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.runner.execution import Attempt
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams, RunStatus
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.lanes import execute_lane
from clawbus.workers.services import WorkerContext
from clawbus.workers.testing import InlineDispatcher, World
from tests.support.sessions import open_sessions

SESSION = "agent:main:cron:lane"


def queue_three(w: World) -> Attempt:
    ctx = w.context(SESSION)
    for text in ("one", "two", "three"):
        receive(ctx, InboundMessageParams(message=text, timeout_seconds=0))
    [head] = w.dispatcher.heads  # only the first was enqueued: the others wait in the lane
    w.dispatcher.drop_heads()
    return Attempt(head.run_id, head.session_key, owner=head.run_id, attempt=0)


def transcript(store: Store) -> list[str]:
    return [message.text for message in store.transcripts.last(SESSION, 10)]


def test_with_budget_left_the_queued_runs_of_the_session_run_in_the_same_task(
    config: Config, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    attempt = queue_three(inline)
    worker = WorkerContext(config, store, dispatcher)
    first, ran_inline = execute_lane(worker, attempt, budget_s=60.0)
    assert first.status == RunStatus.OK
    assert ran_inline == 2
    assert dispatcher.heads == []  # nothing was left to enqueue
    assert transcript(store) == ["one", "echo: one", "two", "echo: two", "three", "echo: three"]


def test_with_no_budget_the_next_run_is_enqueued_as_its_own_task(
    config: Config, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    attempt = queue_three(inline)
    worker = WorkerContext(config, store, dispatcher)
    _first, ran_inline = execute_lane(worker, attempt, budget_s=0.0)
    assert ran_inline == 0
    [next_head] = dispatcher.heads
    assert next_head.session_key == SESSION
    assert transcript(store) == ["one", "echo: one"]
    execute_lane(worker, Attempt(next_head.run_id, SESSION, owner=next_head.run_id, attempt=0), 0.0)
    assert transcript(store)[2:] == ["two", "echo: two"]


def test_a_run_with_runs_queued_behind_it_hands_its_flows_next_step_to_its_task(
    config: Config, store: Store, dispatcher: InlineDispatcher, inline: World
) -> None:
    """Following a flow may run a step's run in this task (another session's model call): with runs
    waiting in the session, they go on first and the step goes to its task."""
    open_sessions(store, config, SESSION)  # a send opens no session
    send = TOOLS["sessions_send"]
    caller = inline.context("main")
    sent = send.run(
        caller, send.parse({"sessionKey": SESSION, "message": "ask", "timeoutSeconds": 0}, caller)
    )
    assert isinstance(sent, SendResult)
    chat = inline.context(SESSION)
    receive(chat, InboundMessageParams(message="chat", timeout_seconds=0))
    [primary] = dispatcher.heads
    dispatcher.drop_heads()
    worker = WorkerContext(config, store, dispatcher)
    first, ran_inline = execute_lane(
        worker, Attempt(primary.run_id, SESSION, owner=primary.run_id, attempt=0), 60.0
    )
    assert first.status == RunStatus.OK
    assert ran_inline == 1  # the chat message, in the same task
    assert transcript(store)[-2:] == ["chat", "echo: chat"]
    # The requester (main) has no session yet and gets its reply turn all the same: the turn is next,
    # handed to its task.
    assert dispatcher.steps == [(StepTask.REPLY_TURN, primary.run_id, 1)]
