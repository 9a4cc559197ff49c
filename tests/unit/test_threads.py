"""shared/intake/threads.py through sessions_spawn and inbound messages: a Discord thread opened for a
sub-agent (a real HTTP server stands in for Discord's API), its messages routed to the child, released when
idle or old."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.commands.inbound import receive
from clawbus.shared.config import load_config
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams, ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World
from tests.conftest import WorldFactory
from tests.support.fake_http import FakeServer, fake_server

CHANNEL = "agent:main:discord:channel:c1"  # the caller talks in Discord channel c1, in no thread
THREAD_ID = "9001"


@pytest.fixture
def discord() -> Iterator[FakeServer]:
    # The start-thread call answers the new thread (a channel object); message posts answer a message.
    with fake_server((201, {"id": THREAD_ID, "type": 11}), (200, {"id": "m1"})) as server:
        yield server


def discord_config(server: FakeServer, **bindings: Any) -> dict[str, Any]:
    channel: dict[str, Any] = {"botToken": "bot-token", "baseUrl": server.url}
    if bindings:
        channel["threadBindings"] = bindings
    return {"channels": {"discord": channel}}


def spawn(w: World, caller: str, **args: Any) -> Any:
    ctx = w.context(caller)
    return TOOLS["sessions_spawn"].invoke(ctx, {"task": "dig into the logs\nthen report", **args})


def message(w: World, key: str, text: str) -> SendResult:
    ctx = w.context(key)
    result = receive(ctx, InboundMessageParams(message=text, channel="discord", to="c1", timeout_seconds=0))
    assert isinstance(result, SendResult), result
    return result


def spawned_in_a_new_thread(
    world: WorldFactory, server: FakeServer, *overrides: dict[str, Any]
) -> tuple[World, str]:
    w = world(discord_config(server), *overrides)
    result = spawn(w, CHANNEL, thread=True, label="log digger")
    assert isinstance(result, SpawnResult), result
    return w, result.child_session_key


def test_thread_true_outside_a_thread_opens_a_discord_thread_and_binds_the_child(
    world: WorldFactory, discord: FakeServer
) -> None:
    w, child_key = spawned_in_a_new_thread(world, discord)
    start = discord.requests[0]
    assert (start.method, start.path) == ("POST", "/channels/c1/threads")
    assert start.headers["Authorization"] == "Bot bot-token"
    assert start.json() == {"name": "log digger", "type": 11, "auto_archive_duration": 1440}
    child = w.store.sessions.get(child_key)
    assert child is not None
    assert child.mode == "session"
    assert child.delivery_context is not None
    assert (child.delivery_context.channel, child.delivery_context.to, child.delivery_context.thread_id) == (
        "discord",
        "c1",
        THREAD_ID,
    )


def test_a_thread_is_named_from_the_tasks_first_line_without_a_label(
    world: WorldFactory, discord: FakeServer
) -> None:
    w = world(discord_config(discord))
    assert isinstance(spawn(w, CHANNEL, thread=True), SpawnResult)
    assert discord.requests[0].json()["name"] == "dig into the logs"


@pytest.mark.parametrize(
    "thread_key", [f"{CHANNEL}:thread:{THREAD_ID}", f"agent:main:discord:channel:{THREAD_ID}"]
)
def test_messages_in_the_bound_thread_go_to_the_child(
    world: WorldFactory, discord: FakeServer, thread_key: str
) -> None:
    w, child_key = spawned_in_a_new_thread(world, discord)
    w.drain()
    answer = message(w, thread_key, "also check the disk")
    assert answer.session_key == child_key
    w.drain()
    texts = [m.text for m in w.store.transcripts.last(child_key, 10)]
    assert "also check the disk" in texts
    assert w.store.sessions.get(thread_key) is None  # the thread got no session of its own
    child = w.store.sessions.get(child_key)
    assert child is not None
    assert child.delivery_context is not None
    assert child.delivery_context.thread_id == THREAD_ID  # the message did not move the child's route


def test_the_childs_report_is_posted_into_its_thread(world: WorldFactory, discord: FakeServer) -> None:
    w, _child_key = spawned_in_a_new_thread(world, discord)
    w.drain()
    posts = [r for r in discord.requests if r.path.endswith("/messages")]
    assert [r.path for r in posts] == [f"/channels/{THREAD_ID}/messages"]
    # The requester's relay of the report (the echo requester's words: "echo: <report>").
    assert posts[0].json()["content"].startswith("echo: Status: success")


def test_a_binding_idle_past_idle_hours_gives_the_thread_back_to_the_parent(
    world: WorldFactory, discord: FakeServer, clock: FixedClock
) -> None:
    w, child_key = spawned_in_a_new_thread(world, discord)
    thread_key = f"{CHANNEL}:thread:{THREAD_ID}"
    clock.advance(23 * 3600)
    assert message(w, thread_key, "still there?").session_key == child_key
    clock.advance(23 * 3600)  # idle time counts from the last message: still bound
    assert message(w, thread_key, "and now?").session_key == child_key
    clock.advance(24 * 3600 + 1)
    assert message(w, thread_key, "hello?").session_key == CHANNEL
    clock.advance(1)
    assert message(w, thread_key, "anyone?").session_key == CHANNEL


def test_a_binding_older_than_max_age_hours_is_released_however_busy(
    world: WorldFactory, discord: FakeServer, clock: FixedClock
) -> None:
    w, child_key = spawned_in_a_new_thread(
        world, discord, {"session": {"threadBindings": {"maxAgeHours": 2}}}
    )
    thread_key = f"{CHANNEL}:thread:{THREAD_ID}"
    for _ in range(3):
        clock.advance(1800)
        assert message(w, thread_key, "busy").session_key == child_key
    clock.advance(1801)
    assert message(w, thread_key, "busy").session_key == CHANNEL


def test_discords_own_thread_bindings_override_the_sessions(
    world: WorldFactory, discord: FakeServer, clock: FixedClock
) -> None:
    w = world(discord_config(discord, idleHours=1))
    result = spawn(w, CHANNEL, thread=True)
    assert isinstance(result, SpawnResult)
    clock.advance(3601)
    assert message(w, f"{CHANNEL}:thread:{THREAD_ID}", "x").session_key == CHANNEL


def test_a_thread_whose_child_was_archived_goes_back_to_the_parent(
    world: WorldFactory, discord: FakeServer
) -> None:
    w, child_key = spawned_in_a_new_thread(world, discord)
    child = w.store.sessions.get(child_key)
    assert child is not None
    w.store.sessions.delete(child)
    assert message(w, f"{CHANNEL}:thread:{THREAD_ID}", "x").session_key == CHANNEL


def test_a_spawn_from_inside_a_discord_thread_binds_that_thread(
    world: WorldFactory, discord: FakeServer, clock: FixedClock
) -> None:
    w = world(discord_config(discord))
    in_thread = "agent:main:discord:channel:c1:thread:77"
    result = spawn(w, in_thread, thread=True)
    assert isinstance(result, SpawnResult)
    assert discord.requests == []  # no thread opened
    assert message(w, in_thread, "to the child").session_key == result.child_session_key
    clock.advance(25 * 3600)
    assert message(w, in_thread, "to me again").session_key == in_thread


@pytest.mark.parametrize(
    "override",
    [
        {"session": {"threadBindings": {"enabled": False}}},
        {"channels": {"discord": {"threadBindings": {"enabled": False}}}},
        {"channels": {"discord": {"threadBindings": {"spawnSubagentSessions": False}}}},
    ],
)
def test_thread_true_outside_a_thread_is_refused_when_threads_may_not_be_opened(
    world: WorldFactory, discord: FakeServer, override: dict[str, Any]
) -> None:
    w = world(discord_config(discord), override)
    refused = spawn(w, CHANNEL, thread=True)
    assert isinstance(refused, ToolFailure)
    assert refused.error.startswith(
        "thread=true opens a discord thread only with a discord channel configured"
    )
    assert discord.requests == []


def test_a_thread_discord_refuses_to_open_is_an_error_and_no_child(world: WorldFactory) -> None:
    with fake_server((403, {"message": "Missing Permissions", "code": 50013})) as refusing:
        w = world(discord_config(refusing))
        refused = spawn(w, CHANNEL, thread=True)
    assert isinstance(refused, ToolFailure)
    assert refused.status == "error"
    assert refused.error.startswith("thread=true: discord did not open a thread: HTTP 403")
    assert w.store.sessions.children(CHANNEL) == []


def test_both_thread_binding_settings_load_from_a_file(tmp_path: Any) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text(
        "{session: {threadBindings: {enabled: true, idleHours: 12, maxAgeHours: 48}},"
        " channels: {discord: {botToken: 't', threadBindings:"
        " {enabled: true, idleHours: 6, maxAgeHours: 24, spawnSubagentSessions: false}}}}"
    )
    config = load_config(path, env={})
    assert config.session.thread_bindings.idle_hours == 12
    discord = config.channels["discord"]
    assert discord.thread_bindings.spawns(True) is False  # type: ignore[union-attr]


def test_a_telegram_forum_topic_is_bound_to_the_sub_agent_spawned_from_it(world: WorldFactory) -> None:
    """A spawn from inside a topic binds that topic, as a Discord thread is bound: the topic's next
    message goes to the child."""
    w = world({"channels": {"telegram": {"botToken": "123:abc"}}})
    topic = "agent:main:telegram:group:-100200:topic:7"
    requester = w.context(topic)
    receive(
        requester, InboundMessageParams(message="hi", channel="telegram", to="-100200", timeout_seconds=0)
    )
    w.drain()
    spawned = spawn(w, topic, thread=True)
    assert isinstance(spawned, SpawnResult), spawned
    assert spawned.mode == "session"
    answer = receive(
        requester,
        InboundMessageParams(message="any news?", channel="telegram", to="-100200", timeout_seconds=0),
    )
    assert isinstance(answer, SendResult)
    assert answer.session_key == spawned.child_session_key
