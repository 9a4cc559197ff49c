"""shared/commands/session.py: `/session idle|max-age|unbind` in a Discord thread bound to a sub-agent (a
real HTTP server stands in for Discord's API), the binding's own limits honoured by shared/intake/threads.py;
and `/agents` naming the binding."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from clawbus.shared.commands.durations import iso
from clawbus.shared.commands.inbound import receive
from clawbus.shared.commands.session import USAGE
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import CommandReply, InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World, world
from tests.conftest import make_config
from tests.support.fake_http import FakeServer, fake_server

CHANNEL = "agent:main:discord:channel:c1"  # the parent talks in Discord channel c1
THREAD_ID = "9001"
THREAD = f"{CHANNEL}:thread:{THREAD_ID}"
HOUR_MS = 3_600_000


@pytest.fixture
def discord() -> Iterator[FakeServer]:
    # The start-thread call answers the new thread; message posts answer a message.
    with fake_server((201, {"id": THREAD_ID, "type": 11}), (200, {"id": "m1"})) as server:
        yield server


@dataclass
class Bound:
    """A sub-agent spawned from channel c1 into thread 9001, and an owner writing on Discord."""

    world: World
    child_key: str

    def say(self, key: str, text: str) -> CommandReply | SendResult:
        w = self.world
        ctx = w.context(key)
        result = receive(
            ctx,
            InboundMessageParams(
                message=text, channel="discord", to="c1", sender_id="boss", timeout_seconds=0
            ),
        )
        assert isinstance(result, CommandReply | SendResult), result
        return result

    def text(self, text: str, key: str = THREAD) -> str:
        answer = self.say(key, text)
        assert isinstance(answer, CommandReply), answer
        return answer.reply or answer.error or ""

    def goes_to(self) -> str:
        """The session a message in the thread goes to now."""
        answer = self.say(THREAD, "anyone there?")
        assert isinstance(answer, SendResult)
        return answer.session_key


@pytest.fixture
def bound(discord: FakeServer) -> Bound:
    config = make_config(
        {
            "channels": {"discord": {"botToken": "bot-token", "baseUrl": discord.url}},
            "commands": {"ownerAllowFrom": ["discord:boss"]},
        }
    )
    w = world(config)
    ctx = w.context(CHANNEL)
    # The parent has talked in c1: a thread-bound child starts with its transcript (context fork).
    said = receive(ctx, InboundMessageParams(message="dig", channel="discord", to="c1", timeout_seconds=0))
    assert isinstance(said, SendResult), said
    w.drain()
    spawned = TOOLS["sessions_spawn"].invoke(
        ctx, {"task": "dig into the logs", "thread": True, "label": "digger"}
    )
    assert isinstance(spawned, SpawnResult), spawned
    return Bound(w, spawned.child_session_key)


@pytest.mark.parametrize("command", ["/session", "/session foo", "/session unbind now", "/SESSION"])
def test_anything_but_idle_max_age_or_unbind_answers_the_usage(bound: Bound, command: str) -> None:
    assert bound.text(command) == USAGE


def test_outside_a_bound_thread_there_is_nothing_to_change(bound: Bound) -> None:
    assert bound.text("/session unbind", key=CHANNEL) == "ℹ️ This conversation is not currently bound."
    slack = CHANNEL.replace("discord:channel:c1", "slack:channel:c1")  # Slack binds no threads
    assert (
        bound.text("/session idle", key=slack)
        == "⚠️ /session commands must be run inside a bindable conversation."
    )


def test_idle_and_max_age_alone_say_the_limits_in_force(bound: Bound) -> None:
    now = bound.world.clock.now_ms()
    assert bound.text("/session idle") == (
        f"ℹ️ Idle timeout active (24h, next auto-unbind at {iso(now + 24 * HOUR_MS)})."
    )
    assert bound.text("/session max-age") == "ℹ️ Max age is currently disabled for this bound session."


def test_idle_sets_the_bindings_own_idle_limit(bound: Bound) -> None:
    now = bound.world.clock.now_ms()
    assert bound.text("/session idle 2h") == (
        f"✅ Idle timeout set to 2h for 1 binding (next auto-unbind at {iso(now + 2 * HOUR_MS)})."
    )
    bound.world.clock.advance(3600)
    assert bound.goes_to() == bound.child_key  # an hour idle: still bound (and idle from now again)
    bound.world.clock.advance(2 * 3600 + 1)
    assert bound.goes_to() == CHANNEL  # released: the thread's messages go to the parent


def test_max_age_sets_the_bindings_own_age_limit(bound: Bound) -> None:
    now = bound.world.clock.now_ms()
    assert bound.text("/session max-age 1h30m") == (
        f"✅ Max age set to 90m for 1 binding (hard auto-unbind at {iso(now + 90 * 60_000)})."
    )
    assert bound.text("/session max-age").startswith("ℹ️ Max age active (90m, hard auto-unbind at ")
    bound.world.clock.advance(91 * 60)
    assert bound.goes_to() == CHANNEL


@pytest.mark.parametrize(
    ("words", "label"), [("1h 30m", "90m"), ("45", "45h"), ("30s", "<1m"), ("1d", "24h")]
)
def test_durations_are_read_as_the_release_reads_them(bound: Bound, words: str, label: str) -> None:
    assert bound.text(f"/session idle {words}").startswith(f"✅ Idle timeout set to {label} for 1 binding")


@pytest.mark.parametrize("off", ["off", "OFF", "none", "0", "disabled"])
def test_off_disables_a_limit(bound: Bound, off: str) -> None:
    assert bound.text(f"/session idle {off}") == "✅ Idle timeout disabled for 1 binding."
    assert bound.text("/session idle") == "ℹ️ Idle timeout is currently disabled for this bound session."
    bound.world.clock.advance(48 * 3600)
    assert bound.goes_to() == bound.child_key


def test_a_duration_it_cannot_read_answers_the_usage_and_changes_nothing(bound: Bound) -> None:
    answer = bound.say(THREAD, "/session idle soon")
    assert isinstance(answer, CommandReply)
    assert (answer.status, answer.error) == ("error", USAGE)
    assert bound.text("/session idle").startswith("ℹ️ Idle timeout active (24h,")


def test_unbind_releases_the_thread_and_keeps_the_sub_agents_session(bound: Bound) -> None:
    assert bound.text("/session unbind") == "✅ Conversation unbound."
    assert bound.goes_to() == CHANNEL
    assert bound.world.store.sessions.get(bound.child_key) is not None
    assert bound.text("/session unbind") == "ℹ️ This conversation is not currently bound."


def test_agents_names_the_thread_a_sub_agent_is_bound_to(bound: Bound) -> None:
    assert bound.text("/agents", key=CHANNEL) == f"agents:\n-----\n1. digger (binding:{THREAD_ID})"
    bound.text("/session unbind")
    # Its run still active, so still listed; its thread no longer bound, on a channel that binds threads.
    assert bound.text("/agents", key=CHANNEL) == "agents:\n-----\n1. digger (unbound)"
