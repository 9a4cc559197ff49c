"""shared/flows.py: the reply-back loop, the announce step and the delivery, run inline (SPEC 4, 5, 9)."""

from __future__ import annotations

from typing import Any

import pytest

from shared import flows
from shared.clock import FixedClock
from shared.config import Config
from shared.inbound import receive
from shared.models import Flow, InboundMessageParams, SendResult
from shared.store import Store
from shared.store.sessions import SessionPatch
from shared.tools import TOOLS, ToolContext
from tests.conftest import RecordingDispatcher, drain_flows, make_config

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


def world(
    overrides: dict[str, Any] | None = None, turns: int = 2
) -> tuple[Config, Store, RecordingDispatcher]:
    import fakeredis

    data: dict[str, Any] = {"session": {"agentToAgent": {"maxPingPongTurns": turns}}, **(overrides or {})}
    config = make_config(data)
    store = Store(fakeredis.FakeRedis(decode_responses=True), config, FixedClock())
    return config, store, RecordingDispatcher()


def chat(
    config: Config, store: Store, dispatcher: RecordingDispatcher, key: str, channel: str, to: str
) -> None:
    """The sessions exist (and have a route) because people wrote in them."""
    ctx = ToolContext.for_caller(config, store, dispatcher, key)
    receive(ctx, InboundMessageParams(message="hello", channel=channel, to=to, timeout_seconds=0))
    drain_flows(store, config, dispatcher)


def exchange(
    config: Config,
    store: Store,
    dispatcher: RecordingDispatcher,
    message: str = "ping",
    requester: str = REQUESTER,
    target: str = TARGET,
) -> tuple[Flow, list[str]]:
    chat(config, store, dispatcher, requester, "webchat", "ann")
    chat(config, store, dispatcher, target, "telegram", "bob")
    ctx = ToolContext.for_caller(config, store, dispatcher, requester)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": target, "message": message, "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert sent.flow_id == sent.run_id
    steps = drain_flows(store, config, dispatcher)
    flow = flows.describe(store, sent.run_id)
    assert flow is not None
    return flow, steps


def texts(store: Store, key: str) -> list[str]:
    return [m.text for m in store.transcripts.last(key, 100)]


def test_two_turns_then_announce_then_one_delivery() -> None:
    config, store, dispatcher = world()
    flow, steps = exchange(config, store, dispatcher)
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
    assert [fields["text"] for _id, fields in store.flows.read_outbox("log", TARGET)] == [
        "echo: Agent-to-agent announce step."
    ]


def test_each_turn_is_a_run_in_its_speakers_session_with_provenance() -> None:
    config, store, dispatcher = world()
    exchange(config, store, dispatcher)
    assert texts(store, REQUESTER)[2:] == ["echo: ping", "echo: echo: ping"]
    assert texts(store, TARGET)[2:] == [
        "ping",
        "echo: ping",
        "echo: echo: ping",
        "echo: echo: echo: ping",
        "Agent-to-agent announce step.",
        "echo: Agent-to-agent announce step.",
    ]
    turn_one = store.transcripts.last(REQUESTER, 100)[2]
    assert turn_one.provenance is not None
    assert (
        turn_one.provenance.kind,
        turn_one.provenance.source_session_key,
        turn_one.provenance.source_channel,
    ) == ("inter_session", TARGET, "telegram")
    announce_input = store.transcripts.last(TARGET, 100)[6]
    assert announce_input.provenance is not None
    assert announce_input.provenance.source_session_key == REQUESTER


def test_reply_turn_contexts_say_who_speaks_and_how_to_stop() -> None:
    config, store, dispatcher = world()
    flow, _ = exchange(config, store, dispatcher)
    first = store.runs.get(flows.turn_run_id(flow.flow_id, 1))
    second = store.runs.get(flows.turn_run_id(flow.flow_id, 2))
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


def test_the_announce_context_carries_the_exchange() -> None:
    config, store, dispatcher = world()
    flow, _ = exchange(config, store, dispatcher)
    announce = store.runs.get(flows.announce_run_id(flow.flow_id))
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


def test_reply_skip_on_turn_two_stops_the_loop_and_the_announce_still_runs() -> None:
    config, store, dispatcher = world(SCRIPTED, turns=5)
    flow, _ = exchange(config, store, dispatcher, message="stop-at-2")
    assert [s.step for s in flow.steps] == ["run", "reply_turn", "reply_turn", "announce"]
    assert flow.stop_reason == "REPLY_SKIP"
    assert flow.delivery_status == "skipped"  # the scripted target also stays silent at the announce


def test_announce_skip_delivers_nothing() -> None:
    config, store, dispatcher = world(SCRIPTED, turns=0)
    flow, _ = exchange(config, store, dispatcher)
    assert flow.delivery_status == "skipped"
    assert flow.delivery is None
    assert store.flows.read_outbox("log", TARGET) == []


@pytest.mark.parametrize(
    ("turns", "requester", "reason"),
    [
        (0, REQUESTER, "maxPingPongTurns is 0"),
        (2, TARGET, "requester is the target"),
        (2, "agent:main:cron:never-used", "no requester session"),
    ],
)
def test_no_loop_goes_straight_to_the_announce(turns: int, requester: str, reason: str) -> None:
    config, store, dispatcher = world(turns=turns)
    chat(config, store, dispatcher, TARGET, "telegram", "bob")
    if requester == REQUESTER:
        chat(config, store, dispatcher, REQUESTER, "webchat", "ann")
    ctx = ToolContext.for_caller(config, store, dispatcher, requester)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    steps = drain_flows(store, config, dispatcher)
    assert steps == ["run:send", "announce", "run:announce", "deliver"]
    flow = flows.describe(store, sent.run_id)
    assert flow is not None
    assert (flow.stop_reason, flow.delivery_status) == (reason, "delivered")


def test_a_failed_primary_ends_the_flow_without_announce(monkeypatch: pytest.MonkeyPatch) -> None:
    config, store, dispatcher = world()
    chat(config, store, dispatcher, REQUESTER, "webchat", "ann")

    class Broken:
        history_window = 1

        def step(self, _request: object) -> None:
            raise RuntimeError("down")

    monkeypatch.setattr("shared.execution.runtime_for", lambda *_: Broken())
    ctx = ToolContext.for_caller(config, store, dispatcher, REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert drain_flows(store, config, dispatcher) == ["run:send"]
    flow = flows.describe(store, sent.run_id)
    assert flow is not None
    assert flow.status == "done"
    assert flow.error == "the primary run ended with status error"


def test_a_step_repeated_by_a_redelivery_starts_nothing_twice() -> None:
    config, store, dispatcher = world()
    flow, _ = exchange(config, store, dispatcher)
    ctx = flows.FlowContext(config, store, dispatcher)
    for performs in ((flows.StartTurn,), (flows.StartAnnounce,), (flows.StartDelivery, flows.Deliver)):
        flows.advance(ctx, flow.flow_id, performs=performs)
    assert dispatcher.heads == []
    assert dispatcher.steps == []
    assert len(texts(store, REQUESTER)) == 4
    assert len(store.flows.read_outbox("log", TARGET)) == 1


def test_a_denied_requester_session_blocks_its_reply_turn_and_the_announce_runs() -> None:
    config, store, dispatcher = world()
    chat(config, store, dispatcher, REQUESTER, "webchat", "ann")
    entry = store.sessions.get(REQUESTER)
    assert entry is not None
    store.sessions.patch(entry, SessionPatch({"sendPolicy": "deny"}))
    flow, steps = exchange(config, store, dispatcher)
    assert "run:reply" not in steps
    assert (flow.stop_reason, flow.delivery_status) == ("send blocked by session policy", "delivered")


def test_a_denied_route_blocks_the_delivery_but_not_the_runs() -> None:
    config, store, dispatcher = world(
        {
            "session": {
                "agentToAgent": {"maxPingPongTurns": 0},
                "sendPolicy": {"rules": [{"action": "deny", "match": {"channel": "log"}}]},
            }
        }
    )
    target = "agent:research:cron:report"  # no route of its own: its announce would go to the log channel
    ctx = ToolContext.for_caller(config, store, dispatcher, REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": target, "message": "hi", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult)
    assert drain_flows(store, config, dispatcher) == ["run:send", "announce", "run:announce", "deliver"]
    flow = flows.describe(store, sent.run_id)
    assert flow is not None
    assert flow.delivery_status == "blocked"
    assert store.flows.read_outbox("log", target) == []


def test_a_step_that_outlives_its_bound_ends_the_flow() -> None:
    config, store, dispatcher = world()
    chat(config, store, dispatcher, REQUESTER, "webchat", "ann")
    ctx = ToolContext.for_caller(config, store, dispatcher, REQUESTER)
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "hi", "timeoutSeconds": 5})
    store.clock.advance(6)  # type: ignore[attr-defined]
    action = flows.advance(flows.FlowContext(config, store, dispatcher), sent.run_id)  # type: ignore[union-attr]
    assert action == flows.Finish("a step did not end within 5s")
