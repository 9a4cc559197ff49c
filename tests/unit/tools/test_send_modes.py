"""shared/tools/send_modes.py through sessions_send (docs/contract.md §4): ``mode: "steer"`` into the
target's running run, ``mode: "notify"`` as context for its next turn, the thread sessions no send may
target, and no reply-back turns where a sub-agent is party to the exchange."""

from __future__ import annotations

from dataclasses import replace

import pytest

from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.send_modes import MISSING_REFUSED, NOT_STEERED, THREAD_REFUSED
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import RunStatus, ToolFailure
from clawbus.shared.wire.send_schema import NotifyResult, SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import InlineDispatcher, World
from tests.support.runs import accept, claim, ok
from tests.support.sessions import open_sessions

TARGET = "agent:main:discord:group:42"


@pytest.fixture
def ctx(ctx: ToolContext, store: Store, config: Config) -> ToolContext:
    open_sessions(store, config, TARGET)
    return ctx


def send(ctx: ToolContext, **args: object) -> object:
    return TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, **args})


def running_chat(store: Store, config: Config) -> tuple[str, str]:
    """A person's run of TARGET that a worker has started: its id and its lease's token."""
    run_id = accept(store, config, "plan the trip", key=TARGET).run_id
    return run_id, claim(store, run_id, key=TARGET).token


# --- steer ----------------------------------------------------------------------------------------------


def test_a_steer_is_accepted_into_the_running_run_with_nothing_to_announce(
    ctx: ToolContext, store: Store, config: Config
) -> None:
    running, _ = running_chat(store, config)
    result = send(ctx, message="also book a hotel", mode="steer")
    assert isinstance(result, SendResult)
    assert result.wire() == {
        "runId": result.run_id,
        "status": "accepted",
        "sessionKey": TARGET,
        "targetDisposition": "steered",
        "delivery": {"status": "skipped", "mode": "announce"},
    }
    assert store.runs.lane(TARGET) == [running, result.run_id]
    assert store.flows.get(result.run_id) is None  # no exchange: the running run owns the reply


def test_the_running_run_takes_a_steered_message_in_at_its_next_step_with_its_provenance(
    ctx: ToolContext, store: Store, config: Config
) -> None:
    running, _ = running_chat(store, config)
    result = send(replace(ctx, origin_run_id="run-asking"), message="also book a hotel", mode="steer")
    assert isinstance(result, SendResult)
    assert store.runs.absorb_steers(running, TARGET) == [result.run_id]
    steered = store.runs.get(result.run_id)
    assert steered is not None
    assert (steered.status, steered.steered_into, steered.parent_run_id) == (
        RunStatus.OK,
        running,
        "run-asking",
    )
    [message] = store.runs.inputs([result.run_id])
    assert message is not None
    assert message.provenance is not None
    assert (message.text, message.provenance.source_tool) == ("also book a hotel", "sessions_send")
    assert message.provenance.source_session_key == "agent:main:main"


def test_a_steer_the_running_run_ends_before_taking_in_runs_as_a_run_of_its_own(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher, inline: World
) -> None:
    running, token = running_chat(store, config)
    result = send(ctx, message="one more thing", mode="steer")
    assert isinstance(result, SendResult)
    committed = ok(store, running, token)
    assert committed.next_head is not None
    dispatcher.dispatch_run(committed.next_head)
    inline.drain_runs()
    ran = store.runs.get(result.run_id)
    assert ran is not None
    assert (ran.status, ran.steered_into, ran.reply) == (RunStatus.OK, None, "echo: one more thing")


def test_a_steer_to_an_idle_session_is_refused_and_queues_nothing(ctx: ToolContext, store: Store) -> None:
    result = send(ctx, message="are you there?", mode="steer")
    assert isinstance(result, ToolFailure)
    assert result.wire() == {
        "runId": result.run_id,
        "status": "error",
        "error": NOT_STEERED,
        "sessionKey": TARGET,
    }
    assert store.runs.lane(TARGET) == []
    assert store.runs.get(result.run_id or "") is None


def test_a_steer_is_refused_while_the_sessions_first_run_has_not_started(
    ctx: ToolContext, store: Store, config: Config
) -> None:
    queued = accept(store, config, "not started yet", key=TARGET).run_id
    result = send(ctx, message="steer this", mode="steer")
    assert isinstance(result, ToolFailure)
    assert result.error == NOT_STEERED
    assert store.runs.lane(TARGET) == [queued]


def test_a_steer_is_refused_while_an_agent_to_agent_run_is_running(ctx: ToolContext, store: Store) -> None:
    """A send's run takes no steers (docs/contract.md §11): nothing is there to take the message in."""
    sent = send(ctx, message="a turn of its own", timeoutSeconds=0)
    assert isinstance(sent, SendResult)
    claim(store, sent.run_id, key=TARGET)
    result = send(ctx, message="steer this", mode="steer")
    assert isinstance(result, ToolFailure)
    assert result.error == NOT_STEERED


def test_a_steer_names_the_stored_key_when_refused_and_the_alias_when_accepted(
    store: Store, config: Config, inline: World
) -> None:
    open_sessions(store, config, "agent:main:main")
    ctx = inline.context("agent:main:discord:group:7")
    refused = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": "main", "message": "x", "mode": "steer"})
    assert isinstance(refused, ToolFailure)
    assert refused.session_key == "agent:main:main"
    run_id = accept(store, config, "busy", key="agent:main:main").run_id
    claim(store, run_id, key="agent:main:main")
    steered = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": "main", "message": "x", "mode": "steer"})
    assert isinstance(steered, SendResult)
    assert steered.session_key == "main"


def test_a_steer_waits_for_nothing_whatever_timeout_it_asks(
    ctx: ToolContext, store: Store, config: Config
) -> None:
    running_chat(store, config)
    result = send(ctx, message="x", mode="steer", timeoutSeconds=60)
    assert isinstance(result, SendResult)
    assert result.status == "accepted"


def test_a_session_may_steer_its_own_running_run_by_its_key(
    store: Store, config: Config, inline: World
) -> None:
    """The release's self-check refuses only a send that waits, and a steer never waits."""
    running, _ = running_chat(store, config)
    own = inline.context(TARGET)
    result = TOOLS["sessions_send"].invoke(
        own, {"sessionKey": TARGET, "message": "note to self", "mode": "steer"}
    )
    assert isinstance(result, SendResult)
    assert store.runs.absorb_steers(running, TARGET) == [result.run_id]


# --- notify ---------------------------------------------------------------------------------------------


def test_a_notification_is_queued_without_starting_a_run_of_the_target(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    result = send(ctx, message="the build is green", mode="notify")
    assert isinstance(result, NotifyResult)
    assert result.wire() == {
        "status": "queued",
        "sessionKey": TARGET,
        "notificationId": result.notification_id,
        "durability": "durable",
        "runStarted": False,
    }
    assert store.flows.get(result.notification_id) is None
    inline.drain_runs()
    note = store.runs.get(result.notification_id)
    assert note is not None
    assert (note.kind, note.status, note.usage.input_tokens) == ("note", RunStatus.OK, None)
    # In the transcript as a forwarded message, for the next turn to read; no one answered it.
    [recorded] = store.transcripts.all(TARGET)
    assert (recorded.role, recorded.text) == ("user", "the build is green")
    assert recorded.provenance is not None
    assert (recorded.provenance.kind, recorded.provenance.source_tool) == ("inter_session", "sessions_send")


def test_a_notification_to_a_busy_session_is_recorded_after_its_running_turn(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher, inline: World
) -> None:
    running, token = running_chat(store, config)
    result = send(ctx, message="fyi: deploy at noon", mode="notify")
    assert isinstance(result, NotifyResult)
    committed = ok(store, running, token, reply="trip planned")
    assert committed.next_head is not None
    dispatcher.dispatch_run(committed.next_head)
    inline.drain_runs()
    said = [(m.role, m.text) for m in store.transcripts.all(TARGET)]
    assert said == [("user", "plan the trip"), ("assistant", "trip planned"), ("user", "fyi: deploy at noon")]


def test_a_notification_to_the_callers_own_session_is_refused_as_a_waited_send_is(
    store: Store, config: Config, inline: World
) -> None:
    open_sessions(store, config, TARGET)
    own = inline.context(TARGET)
    result = TOOLS["sessions_send"].invoke(own, {"sessionKey": TARGET, "message": "x", "mode": "notify"})
    assert isinstance(result, ToolFailure)
    assert result.error == "sessions_send cannot target the calling session; use your own reply instead"


@pytest.mark.parametrize("mode", ["steer", "notify"])
def test_steer_and_notify_need_the_session_to_exist(mode: str, store: Store, inline: World) -> None:
    """An agent's main session takes a send before its first message, but only a turn of its own."""
    ctx = inline.context("agent:main:discord:group:7")
    result = TOOLS["sessions_send"].invoke(ctx, {"agentId": "research", "message": "x", "mode": mode})
    assert isinstance(result, ToolFailure)
    assert (result.status, result.error, result.session_key) == (
        "error",
        MISSING_REFUSED,
        "agent:research:main",
    )
    assert store.sessions.get("agent:research:main") is None


# --- thread sessions ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "agent:main:discord:group:42:thread:7",
        "agent:main:telegram:group:-100:topic:5",
        "agent:main:slack:direct:ann:thread:171.5",
        "agent:main:main:thread:abc",
    ],
)
@pytest.mark.parametrize("mode", [None, "steer", "notify"])
def test_a_send_to_a_thread_session_is_refused_and_writes_nothing(
    ctx: ToolContext, store: Store, config: Config, key: str, mode: str | None
) -> None:
    open_sessions(store, config, key)
    before = sorted(store.redis.keys("*"))
    args = {"sessionKey": key, "message": "x", **({"mode": mode} if mode else {})}
    result = TOOLS["sessions_send"].invoke(ctx, args)
    assert isinstance(result, ToolFailure)
    assert result.wire() == {
        "runId": result.run_id,
        "status": "error",
        "error": THREAD_REFUSED,
        "sessionKey": key,
    }
    assert sorted(store.redis.keys("*")) == before


def test_the_parent_channel_session_of_a_thread_takes_sends(ctx: ToolContext) -> None:
    result = send(ctx, message="x", timeoutSeconds=0)
    assert isinstance(result, SendResult)
    assert result.status == "accepted"


# --- sub-agent coordination -----------------------------------------------------------------------------


def spawned(ctx: ToolContext, w: World) -> str:
    """A child of main whose task and report are over."""
    result = TOOLS["sessions_spawn"].invoke(ctx, {"task": "find out"})
    assert isinstance(result, SpawnResult)
    w.drain()
    return result.child_session_key


def exchange_of(ctx: ToolContext, target: str, w: World) -> list[str]:
    """A send from ``ctx`` to ``target`` run to its end: what ran, and why its loop stopped."""
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": target, "message": "status?", "timeoutSeconds": 0}
    )
    assert isinstance(sent, SendResult)
    ran = w.drain()
    flow = w.store.flows.get(sent.run_id)
    assert flow is not None
    return [*ran, f"stop: {flow.stop_reason}"]


def test_a_send_to_a_sub_agent_runs_no_reply_turns(ctx: ToolContext, inline: World) -> None:
    child = spawned(ctx, inline)
    ran = exchange_of(ctx, child, inline)
    assert not [step for step in ran if step.startswith("reply_turn")]
    assert ran[-1] == "stop: target is a sub-agent"


def test_a_send_from_a_sub_agent_runs_no_reply_turns(ctx: ToolContext, inline: World) -> None:
    child = spawned(ctx, inline)
    as_child = inline.context(child)
    ran = exchange_of(as_child, TARGET, inline)
    assert not [step for step in ran if step.startswith("reply_turn")]
    assert ran[-1] == "stop: requester is a sub-agent"


def test_a_send_between_two_peer_sessions_still_runs_its_reply_turns(ctx: ToolContext, inline: World) -> None:
    ran = exchange_of(ctx, TARGET, inline)
    assert [step for step in ran if step.startswith("reply_turn")]
