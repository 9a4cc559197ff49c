"""shared/flows.py: the reply-back loop, the announce step and the delivery, run inline (docs/contract.md §4, 5, 9)."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.base.flow_ids import announce_run_id, delivery_id, turn_run_id
from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain.sessions import SessionPatch
from clawbus.shared.flows.decide import Action, Finish, StartAnnounce, Wait
from clawbus.shared.flows.engine import advance
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.flows.view import describe
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import Flow, InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import World
from tests.conftest import BrokenModel, WorldFactory
from tests.support.sessions import open_sessions

REQUESTER = "agent:main:webchat:direct:ann"
TARGET = "agent:research:telegram:direct:bob"
SCRIPTED = {
    "agents": {"list": [{"id": "main", "default": True}, {"id": "research", "model": "script/script"}]},
    "models": {
        "providers": {
            "script": {
                "type": "script",
                "rules": [
                    {"match": "^echo: echo: stop-at-2", "reply": "REPLY_SKIP"},
                    {"match": "^Agent-to-agent announce step\\.$", "reply": "ANNOUNCE_SKIP"},
                ],
            }
        }
    },
}


def turns(count: int) -> dict[str, Any]:
    return {"session": {"agentToAgent": {"maxPingPongTurns": count}}}


@pytest.fixture
def world(world: WorldFactory) -> WorldFactory:
    """Two reply-back turns unless a test says otherwise."""
    return lambda *overrides: world(turns(2), *overrides)


def chat(w: World, key: str, channel: str, to: str) -> None:
    """The sessions exist (and have a route) because people wrote in them."""
    ctx = w.context(key)
    receive(ctx, InboundMessageParams(message="hello", channel=channel, to=to, timeout_seconds=0))
    w.drain()


def exchange(
    w: World,
    message: str = "ping",
    requester: str = REQUESTER,
    target: str = TARGET,
) -> tuple[Flow, list[str]]:
    chat(w, requester, "webchat", "ann")
    chat(w, target, "telegram", "bob")
    ctx = w.context(requester)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": target, "message": message, "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert sent.flow_id == sent.run_id
    steps = w.drain()
    flow = describe(w.store, sent.run_id)
    assert flow is not None
    return flow, steps


def texts(store: Store, key: str) -> list[str]:
    return [m.text for m in store.transcripts.last(key, 100)]


def test_two_turns_then_announce_then_one_delivery(world: WorldFactory) -> None:
    w = world()
    flow, steps = exchange(w)
    assert steps == [
        "run:send",
        "reply_turn:1",
        "run:reply",
        "reply_turn:2",
        "run:reply",
        "announce",
        "run:announce",
        "deliver",
    ]
    assert [(s.step, s.turn, s.session_key) for s in flow.steps] == [
        ("run", None, TARGET),
        ("reply_turn", 1, REQUESTER),
        ("reply_turn", 2, TARGET),
        ("announce", None, TARGET),
        ("deliver", None, TARGET),
    ]
    assert (flow.status, flow.stop_reason, flow.delivery_status) == ("done", "max turns", "delivered")
    assert flow.delivery is not None
    assert (flow.delivery.channel, flow.delivery.to) == ("telegram", "bob")
    # Telegram is not configured here: its delivery went through the log adapter, into the session's outbox.
    assert [fields["text"] for _id, fields in w.store.flows.read_outbox("log", TARGET)] == [
        "echo: Agent-to-agent announce step."
    ]


def test_each_turn_is_a_run_in_its_speakers_session_with_provenance(world: WorldFactory) -> None:
    w = world()
    exchange(w)
    assert texts(w.store, REQUESTER)[2:] == ["echo: ping", "echo: echo: ping"]
    assert texts(w.store, TARGET)[2:] == [
        "ping",
        "echo: ping",
        "echo: echo: ping",
        "echo: echo: echo: ping",
        "Agent-to-agent announce step.",
        "echo: Agent-to-agent announce step.",
    ]
    turn_one = w.store.transcripts.last(REQUESTER, 100)[2]
    assert turn_one.provenance is not None
    assert (
        turn_one.provenance.kind,
        turn_one.provenance.source_session_key,
        turn_one.provenance.source_channel,
    ) == ("inter_session", TARGET, "telegram")
    announce_input = w.store.transcripts.last(TARGET, 100)[6]
    assert announce_input.provenance is not None
    assert announce_input.provenance.source_session_key == REQUESTER


def test_reply_turn_contexts_say_who_speaks_and_how_to_stop(world: WorldFactory) -> None:
    w = world()
    flow, _ = exchange(w)
    first = w.store.runs.get(turn_run_id(flow.flow_id, 1))
    second = w.store.runs.get(turn_run_id(flow.flow_id, 2))
    assert first is not None
    assert second is not None
    assert first.context == "\n".join(
        [
            "Agent-to-agent reply step:",
            "Current agent: Agent 1 (requester).",
            "Turn 1 of 2.",
            f"Agent 1 (requester) session: {REQUESTER}.",
            "Agent 1 (requester) channel: webchat.",
            f"Agent 2 (target) session: {TARGET}.",
            "Agent 2 (target) channel: telegram.",
            'If you want to stop the ping-pong, reply exactly "REPLY_SKIP".',
        ]
    )
    assert second.context is not None
    assert "Current agent: Agent 2 (target).\nTurn 2 of 2." in second.context


def test_the_announce_context_carries_the_exchange(world: WorldFactory) -> None:
    w = world()
    flow, _ = exchange(w)
    announce = w.store.runs.get(announce_run_id(flow.flow_id))
    assert announce is not None
    assert announce.context is not None
    for line in [
        "Original request: ping",
        "Round 1 reply: echo: ping",
        "Latest reply: echo: echo: echo: ping",
        'If you want to remain silent, reply exactly "ANNOUNCE_SKIP".',
        "Any other reply will be posted to the target channel.",
        "After this reply, the agent-to-agent conversation is over.",
    ]:
        assert line in announce.context


def test_reply_skip_on_turn_two_stops_the_loop_and_the_announce_still_runs(world: WorldFactory) -> None:
    w = world(SCRIPTED, turns(5))
    flow, _ = exchange(w, message="stop-at-2")
    assert [s.step for s in flow.steps] == ["run", "reply_turn", "reply_turn", "announce"]
    assert flow.stop_reason == "REPLY_SKIP"
    assert flow.delivery_status == "skipped"  # the scripted target also stays silent at the announce


def test_announce_skip_delivers_nothing(world: WorldFactory) -> None:
    w = world(SCRIPTED, turns(0))
    flow, _ = exchange(w)
    assert flow.delivery_status == "skipped"
    assert flow.delivery is None
    assert w.store.flows.read_outbox("log", TARGET) == []


@pytest.mark.parametrize(
    ("count", "requester", "reason"),
    [
        (0, REQUESTER, "maxPingPongTurns is 0"),
        (2, TARGET, "requester is the target"),
    ],
)
def test_no_loop_goes_straight_to_the_announce(
    count: int, requester: str, reason: str, world: WorldFactory
) -> None:
    w = world(turns(count))
    chat(w, TARGET, "telegram", "bob")
    if requester == REQUESTER:
        chat(w, REQUESTER, "webchat", "ann")
    ctx = w.context(requester)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    steps = w.drain()
    assert steps == ["run:send", "announce", "run:announce", "deliver"]
    flow = describe(w.store, sent.run_id)
    assert flow is not None
    assert (flow.stop_reason, flow.delivery_status) == (reason, "delivered")


def test_a_failed_primary_ends_the_flow_without_announce(
    monkeypatch: pytest.MonkeyPatch, world: WorldFactory
) -> None:
    w = world()
    chat(w, REQUESTER, "webchat", "ann")
    open_sessions(w.store, w.config, TARGET)
    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_: BrokenModel())
    ctx = w.context(REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert w.drain() == ["run:send"]
    flow = describe(w.store, sent.run_id)
    assert flow is not None
    assert (flow.status, flow.stop_reason) == ("done", "primary_failed")
    assert flow.error == "the primary run ended with status error"


def test_a_step_repeated_by_a_redelivery_starts_nothing_twice(world: WorldFactory) -> None:
    w = world()
    flow, _ = exchange(w)
    ctx = FlowContext.within(w)
    for task in StepTask:
        advance(ctx, flow.flow_id, task)
    assert w.dispatcher.heads == []
    assert w.dispatcher.steps == []
    assert len(texts(w.store, REQUESTER)) == 4
    assert len(w.store.flows.read_outbox("log", TARGET)) == 1


def test_a_denied_requester_session_blocks_its_reply_turn_and_the_announce_runs(world: WorldFactory) -> None:
    w = world()
    chat(w, REQUESTER, "webchat", "ann")
    entry = w.store.sessions.get(REQUESTER)
    assert entry is not None
    w.store.sessions.patch(entry, SessionPatch({"sendPolicy": "deny"}))
    flow, steps = exchange(w)
    assert "run:reply" not in steps
    assert (flow.stop_reason, flow.delivery_status) == ("send blocked by session policy", "delivered")


def test_a_denied_route_blocks_the_delivery_but_not_the_runs(world: WorldFactory) -> None:
    w = world(
        {
            "session": {
                "agentToAgent": {"maxPingPongTurns": 0},
                "sendPolicy": {"rules": [{"action": "deny", "match": {"channel": "log"}}]},
            }
        }
    )
    target = "agent:research:cron:report"  # no route of its own: its announce would go to the log channel
    open_sessions(w.store, w.config, target)
    ctx = w.context(REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": target, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert w.drain() == ["run:send", "announce", "run:announce", "deliver"]
    flow = describe(w.store, sent.run_id)
    assert flow is not None
    assert flow.delivery_status == "blocked"
    assert w.store.flows.read_outbox("log", target) == []


def _send(w: World, timeout_seconds: float = 5) -> str:
    """A send from the requester to the target that nobody has worked on yet."""
    chat(w, REQUESTER, "webchat", "ann")
    open_sessions(w.store, w.config, TARGET)
    ctx = w.context(REQUESTER)
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": timeout_seconds}
    )
    assert isinstance(sent, SendResult | AwaitRun)
    return sent.run_id


def _start(store: Store, run_id: str, session_key: str) -> None:
    """A worker claimed the run: it is running from now on."""
    claim = store.runs.claim(run_id, session_key, owner="w", attempt=0, lease_ms=600_000, max_attempts=3)
    assert claim.state is not None


def _advance(w: World, flow_id: str) -> Action:
    return advance(FlowContext.within(w), flow_id)


def test_a_step_queued_longer_than_its_bound_is_waited_for_and_the_flow_completes(
    world: WorldFactory, clock: FixedClock
) -> None:
    w = world()
    flow_id = _send(w, timeout_seconds=5)
    clock.advance(120)
    assert isinstance(_advance(w, flow_id), Wait)
    w.drain()
    flow = describe(w.store, flow_id)
    assert flow is not None
    assert (flow.status, flow.delivery_status, flow.error) == ("done", "delivered", None)


def test_a_step_running_past_its_bound_ends_the_flow_as_step_timeout(
    world: WorldFactory, clock: FixedClock
) -> None:
    w = world()
    flow_id = _send(w, timeout_seconds=5)
    clock.advance(100)
    _start(w.store, flow_id, TARGET)
    clock.advance(4)
    assert isinstance(_advance(w, flow_id), Wait)
    clock.advance(2)
    action = _advance(w, flow_id)
    assert action == Finish("step_timeout", "the primary run did not end within 5s of starting")
    flow = w.store.flows.get(flow_id)
    assert flow is not None
    assert (flow.status, flow.stop_reason, flow.error) == ("done", "step_timeout", action.error)
    assert w.store.fleet.figures([]).flows_ended == {"step_timeout": 1}


def test_a_waiting_flow_is_looked_at_again_when_its_running_step_would_overrun(world: WorldFactory) -> None:
    w = world()
    flow_id = _send(w, timeout_seconds=5)
    _start(w.store, flow_id, TARGET)
    started = w.store.clock.now_ms()
    _advance(w, flow_id)
    assert w.store.redis.zscore(w.store.keys.flows_due(), flow_id) == started + 5_000 + 1


def test_a_flow_past_flow_timeout_seconds_ends_as_flow_timeout(
    world: WorldFactory, clock: FixedClock
) -> None:
    w = world({"session": {"agentToAgent": {"flowTimeoutSeconds": 300}}})
    flow_id = _send(w)
    clock.advance(299)
    assert isinstance(_advance(w, flow_id), Wait)
    clock.advance(2)
    action = _advance(w, flow_id)
    assert action == Finish(
        "flow_timeout", "the flow did not end within 300s (session.agentToAgent.flowTimeoutSeconds)"
    )
    flow = w.store.flows.get(flow_id)
    assert flow is not None
    assert (flow.status, flow.stop_reason) == ("done", "flow_timeout")
    # The primary run itself goes on; when it ends, the flow stays over.
    w.drain()
    assert w.store.runs.get(announce_run_id(flow_id)) is None


def test_a_failed_reply_turn_is_followed_by_the_announce(world: WorldFactory) -> None:
    failing = {
        **SCRIPTED,
        "models": {
            "providers": {
                "script": {
                    "type": "script",
                    "rules": [{"match": "^echo: echo: fail-turn", "error": "model down"}],
                }
            }
        },
    }
    w = world(failing, turns(5))
    flow, steps = exchange(w, message="fail-turn")
    assert steps[-3:] == ["announce", "run:announce", "deliver"]
    assert [(s.step, s.turn, s.status) for s in flow.steps] == [
        ("run", None, "ok"),
        ("reply_turn", 1, "ok"),
        ("reply_turn", 2, "error"),
        ("announce", None, "ok"),
        ("deliver", None, "delivered"),
    ]
    assert flow.stop_reason == "reply turn 2 ended with status error"
    announce = w.store.runs.get(announce_run_id(flow.flow_id))
    assert announce is not None
    assert announce.context is not None
    assert "Latest reply: echo: echo: fail-turn" in announce.context


def test_a_reply_turn_running_past_its_bound_stops_the_loop_and_the_announce_runs(
    world: WorldFactory, clock: FixedClock
) -> None:
    w = world()
    flow_id = _send(w, timeout_seconds=5)
    w.drain_runs()  # the primary run
    ctx = FlowContext.within(w)
    advance(ctx, flow_id, StepTask.REPLY_TURN)  # turn 1 accepted, in the requester's lane
    w.dispatcher.drop_heads()
    _start(w.store, turn_run_id(flow_id, 1), REQUESTER)
    clock.advance(6)
    assert isinstance(advance(ctx, flow_id), StartAnnounce)
    w.drain()
    flow = describe(w.store, flow_id)
    assert flow is not None
    assert flow.stop_reason == "reply turn 1 did not end within 5s of starting"
    assert (flow.status, flow.delivery_status) == ("done", "delivered")


def test_every_flow_end_is_counted_by_reason(monkeypatch: pytest.MonkeyPatch, world: WorldFactory) -> None:
    w = world()
    exchange(w)
    exchange(w, message="again")
    monkeypatch.setattr("clawbus.shared.runner.execution.runtime_for", lambda *_: BrokenModel())
    ctx = w.context(REQUESTER)
    TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "x", "timeoutSeconds": 0})
    w.drain()
    assert w.store.fleet.figures([]).flows_ended == {"completed": 2, "primary_failed": 1}


def test_an_early_end_is_logged_as_a_warning_with_its_flow_id(
    caplog: pytest.LogCaptureFixture, world: WorldFactory, clock: FixedClock
) -> None:
    w = world({"session": {"agentToAgent": {"flowTimeoutSeconds": 1}}})
    flow_id = _send(w)
    clock.advance(2)
    with caplog.at_level("WARNING", logger="clawbus.shared.flows.engine"):
        _advance(w, flow_id)
        _advance(w, flow_id)  # a second look ends nothing and logs nothing
    assert [r.getMessage() for r in caplog.records] == [
        f"flow {flow_id} ended early (flow_timeout): the flow did not end within 1s "
        "(session.agentToAgent.flowTimeoutSeconds)"
    ]


def test_a_run_task_that_follows_its_flow_itself_ends_the_exchange_as_step_tasks_do(
    world: WorldFactory,
) -> None:
    """Workers perform a flow's next step in the run task (no queue hop between the runs of an exchange):
    the same turns, transcripts and one delivery, made in the same task (its channel, with no adapter
    configured, is delivered through ``log``, inside clawbus)."""
    w = world()
    chat(w, REQUESTER, "webchat", "ann")
    chat(w, TARGET, "telegram", "bob")
    ctx = w.context(REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "ping", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert w.drain(follow_inline=True) == ["run:send"]
    flow = describe(w.store, sent.run_id)
    assert flow is not None
    assert [(s.step, s.turn, s.status) for s in flow.steps] == [
        ("run", None, "ok"),
        ("reply_turn", 1, "ok"),
        ("reply_turn", 2, "ok"),
        ("announce", None, "ok"),
        ("deliver", None, "delivered"),
    ]
    assert (flow.status, flow.stop_reason, flow.delivery_status) == ("done", "max turns", "delivered")
    assert texts(w.store, TARGET)[2:] == [
        "ping",
        "echo: ping",
        "echo: echo: ping",
        "echo: echo: echo: ping",
        "Agent-to-agent announce step.",
        "echo: Agent-to-agent announce step.",
    ]


def test_a_delivery_to_an_outside_channel_goes_to_the_delivery_task(world: WorldFactory) -> None:
    """An HTTP channel may take seconds and back off between attempts: the run task creates the delivery
    and leaves the attempts to the delivery task."""
    w = world(
        {
            "channels": {
                "telegram": {
                    "type": "telegram",
                    "botToken": "123:abc",
                    "baseUrl": "http://127.0.0.1:9",
                    "timeoutSeconds": 1,
                }
            }
        }
    )
    chat(w, REQUESTER, "webchat", "ann")
    chat(w, TARGET, "telegram", "bob")
    ctx = w.context(REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "ping", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    # Every attempt is the delivery task's (none by the run task), retried after its backoff until
    # delivery.maxAttempts: nothing listens on port 9.
    assert w.drain(follow_inline=True) == ["run:send", *["deliver"] * 5]
    delivery = w.store.flows.get_delivery(delivery_id(sent.run_id))
    assert delivery is not None
    assert (delivery.channel, delivery.attempts, delivery.status) == ("telegram", 5, "failed")


def test_a_requester_with_no_session_yet_gets_its_reply_turn_in_a_session_it_opens(
    world: WorldFactory,
) -> None:
    w = world(turns(1))
    chat(w, TARGET, "telegram", "bob")
    requester = "agent:main:cron:never-used"
    ctx = w.context(requester)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    steps = w.drain()
    assert steps[:3] == ["run:send", "reply_turn:1", "run:reply"]
    assert w.store.sessions.exists(requester)


def test_a_send_to_main_from_main_runs_its_reply_turns_as_the_release_does(world: WorldFactory) -> None:
    """By its alias the main session is another to the release's self-check: it answers itself."""
    w = world(turns(2))
    main = w.context("main")
    sent = TOOLS["sessions_send"].invoke(main, {"sessionKey": "main", "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    steps = w.drain()
    assert steps[:5] == ["run:send", "reply_turn:1", "run:reply", "reply_turn:2", "run:reply"]
    by_key = TOOLS["sessions_send"].invoke(
        main, {"sessionKey": "agent:main:main", "message": "hi", "timeoutSeconds": 0}
    )
    assert isinstance(by_key, SendResult)
    flow = w.store.flows.get(by_key.run_id)
    assert flow is not None
    assert flow.loop_skipped == "requester is the target"
