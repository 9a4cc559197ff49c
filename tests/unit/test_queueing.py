"""shared/flows/queueing.py through inbound messages (clawbus.workers.testing.world): each queue mode of a busy
session, the cap and its drop policies, and where the mode comes from."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain.chains import Chain
from clawbus.shared.domain.sessions import SessionPatch
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import CommandReply, InboundMessageParams, RunStatus, ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import World, world
from tests.support.replies import reply_lost

KEY = "agent:main:webchat:direct:ann"


def busy_world(**queue: Any) -> World:
    """A session with a chat run in its lane (not yet run): it is busy for every message after."""
    w = world({"messages": {"queue": queue}, "tools": {"sessions": {"visibility": "all"}}})
    assert say(w, "first", queueMode="followup").status == "accepted"
    return w


def say(w: World, text: str, **fields: Any) -> Any:
    ctx = w.context(KEY)
    result = receive(
        ctx, InboundMessageParams.model_validate({"message": text, "timeoutSeconds": 0, **fields})
    )
    assert isinstance(result, SendResult | ToolFailure | CommandReply), result
    return result


def lane_inputs(w: World) -> list[str]:
    return [m.text if m else "" for m in w.store.runs.inputs(w.store.runs.lane(KEY))]


def test_followup_queues_each_message_as_a_run_of_its_own() -> None:
    w = busy_world()
    say(w, "second")
    assert lane_inputs(w) == ["first", "second"]


def test_collect_folds_the_messages_of_its_window_into_one_run() -> None:
    w = world({"messages": {"queue": {"mode": "collect", "debounceMs": 500}}})
    answers = [say(w, f"part {i}") for i in range(5)]
    assert {a.run_id for a in answers} == {answers[0].run_id}  # one run answers all five
    [run_id] = w.store.runs.lane(KEY)
    run = w.store.runs.get(run_id)
    assert run is not None
    assert run.kind == "collect"
    w.drain()  # its claim waits for the window to close (the clock moves on by it), then it runs
    said = [(m.role, m.text) for m in w.store.transcripts.all(KEY)]
    assert said == [
        ("user", "part 0\npart 1\npart 2\npart 3\npart 4"),
        ("assistant", "echo: part 0\npart 1\npart 2\npart 3\npart 4"),
    ]
    # After the window, a message starts a collect run of its own.
    later = say(w, "later")
    assert later.run_id != answers[0].run_id


def test_collect_keeps_folding_while_the_session_is_busy_past_its_window() -> None:
    w = busy_world(mode="collect", debounceMs=100)
    say(w, "a")
    w.clock.advance(10)  # long past the window, but the collect run still waits behind "first"
    say(w, "b")
    assert lane_inputs(w) == ["first", "a\nb"]


def test_a_message_folded_in_is_folded_once_when_its_accept_is_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The accept's reply lost with the connection: redis-py sends it again, and the repeat answers
    ``folded`` as the first did instead of folding the text a second time."""
    w = busy_world(mode="collect", debounceMs=100)
    opened = say(w, "a")
    monkeypatch.setattr(w.store.redis, "evalsha", reply_lost(w.store.redis.evalsha))
    folded = say(w, "b")
    monkeypatch.undo()
    assert folded.run_id == opened.run_id
    assert lane_inputs(w) == ["first", "a\nb"]


def test_interrupt_stops_what_runs_and_drops_the_queue_and_the_new_message_runs_next() -> None:
    w = busy_world()
    queued = say(w, "second")
    new = say(w, "stop that, do this", queueMode="interrupt")
    assert w.store.runs.lane(KEY) == [new.run_id]
    dropped = w.store.runs.get(queued.run_id)
    assert dropped is not None
    assert (dropped.status, dropped.error) == (
        RunStatus.ABORTED,
        "interrupted by a newer message (queue mode interrupt)",
    )


def test_reject_answers_busy_with_the_running_run_and_queues_nothing() -> None:
    w = busy_world(mode="reject")
    head = w.store.runs.lane(KEY)[0]
    refused = say(w, "second")
    assert isinstance(refused, SendResult)
    assert (refused.status, refused.run_id) == ("busy", head)
    assert refused.error == (
        f"{KEY} is busy with run {head} (queue mode reject): nothing was queued; send it again once that "
        "run has ended, or with another queueMode"
    )
    assert w.store.runs.lane(KEY) == [head]


@pytest.mark.parametrize(
    ("drop", "lane_after", "figure"),
    [
        ("old", ["first", "c", "d"], {"old": 1}),
        ("new", ["first", "b", "c"], {"new": 1}),
        ("summarize", ["first", "c", "1 earlier messages: b\n\nd"], {"summarize": 1}),
    ],
)
def test_the_cap_and_each_drop_policy(drop: str, lane_after: list[str], figure: dict[str, int]) -> None:
    w = busy_world(cap=2, drop=drop)
    for text in ("b", "c"):
        assert say(w, text).status == "accepted"
    last = say(w, "d")
    assert lane_inputs(w) == lane_after
    assert w.store.fleet.figures([]).messages_dropped == figure
    if drop == "new":
        assert isinstance(last, ToolFailure)
        assert last.error.startswith("dropped: ")
        assert "messages.queue.cap=2, drop=new" in last.error


def test_a_dropped_run_says_so() -> None:
    w = busy_world(cap=1, drop="old")
    b = say(w, "b")
    say(w, "c")
    dropped = w.store.runs.get(b.run_id)
    assert dropped is not None
    assert dropped.status is RunStatus.ABORTED
    assert dropped.error == "dropped: a newer message came while the queue was full (messages.queue.cap=1)"


def test_a_queued_run_another_client_ended_meanwhile_is_neither_counted_nor_summarized_as_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = busy_world(cap=1, drop="summarize")
    b = say(w, "b")
    cancel = w.store.runs.cancel

    def cancelled_first(run_id: str, reason: str) -> Any:
        cancel(run_id, "cancelled by its sender")  # another client's cancel lands just before the drop's
        return cancel(run_id, reason)

    monkeypatch.setattr(w.store.runs, "cancel", cancelled_first)
    say(w, "c")
    monkeypatch.undo()
    assert w.store.fleet.figures([]).messages_dropped == {}
    assert lane_inputs(w) == ["first", "c"]  # no "1 earlier messages: b" in it
    ended = w.store.runs.get(b.run_id)
    assert ended is not None
    assert ended.error == "cancelled by its sender"


def test_the_mode_comes_from_the_message_then_the_session_then_the_channel_then_the_default() -> None:
    w = busy_world(mode="followup", byChannel={"discord": "reject"})
    assert say(w, "x", channel="discord", to="d").status == "busy"
    assert say(w, "y", channel="discord", to="d", queueMode="followup").status == "accepted"
    entry = w.store.sessions.get(KEY)
    assert entry is not None
    w.store.sessions.patch(entry, SessionPatch({"queueMode": "reject"}))
    assert say(w, "z").status == "busy"


def test_the_queue_command_sets_and_resets_the_sessions_mode() -> None:
    w = busy_world()
    route = {"channel": "webchat", "senderId": "ann"}  # the session's own sender
    set_it = say(w, "/queue reject", **route)
    assert set_it.reply == "⚙️ Queue mode set to reject."
    assert say(w, "x").status == "busy"
    assert say(w, "/queue reset", **route).reply == "⚙️ Queue mode reset to default."
    assert say(w, "y").status == "accepted"
    unknown = say(w, "/queue sometimes", **route)
    assert unknown.error.startswith('Unrecognized queue mode "sometimes". Valid modes: steer, followup')
    refused = say(w, "/queue reject", channel="webchat", senderId="mallory")
    assert refused.status == "error"


def test_a_message_whose_chain_a_guard_refuses_interrupts_nothing() -> None:
    """The chain guard judges an inbound message (one another host sent on) before its queue mode acts."""
    w = busy_world()
    queued = say(w, "second")
    at_limit = Chain("far-away", 8, ())
    ctx = w.context(KEY)
    params = InboundMessageParams(message="stop that", timeout_seconds=0, queue_mode="interrupt")
    refused = receive(ctx, params, chain=at_limit)
    assert isinstance(refused, ToolFailure)
    assert (refused.status, refused.guard) == ("forbidden", "maxHops")
    assert lane_inputs(w) == ["first", "second"]
    kept = w.store.runs.get(queued.run_id)
    assert kept is not None
    assert kept.status is RunStatus.QUEUED


def test_a_send_to_a_busy_session_may_reject_or_interrupt_but_never_drops_agent_traffic() -> None:
    w = busy_world()
    ctx = w.context("main")
    head = w.store.runs.lane(KEY)[0]
    refused = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": KEY, "message": "m", "timeoutSeconds": 0, "queueMode": "reject"}
    )
    assert (refused.status, refused.run_id) == ("busy", head)
    queued = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": KEY, "message": "m2", "timeoutSeconds": 0})
    assert queued.status == "accepted"
    first = say(w, "person", queueMode="followup")
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": KEY, "message": "now", "timeoutSeconds": 0, "queueMode": "interrupt"}
    )
    # The people's runs went; the earlier send (agent-to-agent) is still queued, the new one behind it.
    assert w.store.runs.lane(KEY) == [queued.run_id, sent.run_id]
    assert first.run_id not in w.store.runs.lane(KEY)


def test_the_status_card_says_the_mode_a_message_would_meet_and_where_it_comes_from() -> None:
    w = busy_world(mode="followup", byChannel={"webchat": "collect"})
    ctx = w.context(KEY)

    def card() -> tuple[str, str]:
        status = TOOLS["session_status"].invoke(ctx, {})
        return status.queue_mode, status.queue_mode_source

    assert card() == ("followup", "default")
    say(w, "from the chat", channel="webchat", senderId="ann")
    assert card() == ("collect", "channel")
    entry = w.store.sessions.get(KEY)
    assert entry is not None
    w.store.sessions.patch(entry, SessionPatch({"queueMode": "steer"}))
    assert card() == ("steer", "session")
