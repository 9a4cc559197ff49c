"""shared/commands: the owner-only `/send on|off|inherit`, `/stop`, how a message is read as a command and
who may run one."""

from __future__ import annotations

import pytest

from clawbus.shared.commands import is_command
from clawbus.shared.commands.base import Invocation, parse
from clawbus.shared.commands.inbound import receive
from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import CommandReply, InboundMessageParams, ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher, World
from tests.conftest import WorldFactory, make_config

KEY = "agent:main:telegram:direct:7"


@pytest.fixture
def config() -> Config:
    return make_config({"commands": {"ownerAllowFrom": ["telegram:7"]}})


def say(w: World, text: str, sender: str = "7"):  # type: ignore[no-untyped-def]
    ctx = w.context(KEY)
    return receive(
        ctx, InboundMessageParams(message=text, channel="telegram", sender_id=sender, timeout_seconds=0)
    )


@pytest.mark.parametrize(
    ("command", "stored", "reply"),
    [
        ("/send on", "allow", "Send policy for this session: allow."),
        ("/send allow", "allow", "Send policy for this session: allow."),
        ("/send off", "deny", "Send policy for this session: deny."),
        ("/SEND Deny", "deny", "Send policy for this session: deny."),
    ],
)
def test_the_owner_sets_the_sessions_policy(
    store: Store, dispatcher: InlineDispatcher, command: str, stored: str, reply: str, inline: World
) -> None:
    result = say(inline, command)
    assert isinstance(result, CommandReply)
    assert (result.status, result.reply) == ("ok", reply)
    entry = store.sessions.get(KEY)
    assert entry is not None
    assert entry.send_policy == stored
    assert dispatcher.heads == []  # a command is not a run


@pytest.mark.parametrize("word", ["inherit", "default", "reset"])
def test_inherit_clears_the_override(store: Store, word: str, inline: World) -> None:
    say(inline, "/send off")
    result = say(inline, f"/send {word}")
    assert isinstance(result, CommandReply)
    assert result.reply == "Send policy for this session: inherit (follows session.sendPolicy)."
    entry = store.sessions.get(KEY)
    assert entry is not None
    assert entry.send_policy is None


@pytest.mark.parametrize("text", ["/send", "/send maybe", "/send on now"])
def test_no_or_a_bad_argument_gets_the_usage(text: str, inline: World) -> None:
    result = say(inline, text)
    assert isinstance(result, CommandReply)
    assert result.reply == "Usage: /send on|off|inherit"


@pytest.mark.parametrize("sender", ["8", None])
def test_a_non_owner_is_refused_and_nothing_changes(store: Store, sender: str | None, inline: World) -> None:
    ctx = inline.context(KEY)
    result = receive(
        ctx,
        InboundMessageParams(message="/send off", channel="telegram", sender_id=sender, timeout_seconds=0),
    )
    assert isinstance(result, CommandReply)
    assert (result.status, result.error) == ("error", "/send is owner-only (commands.ownerAllowFrom)")
    assert store.sessions.get(KEY) is None


def test_without_configured_owners_nobody_is_an_owner(world: WorldFactory) -> None:
    result = say(world(), "/send off")
    assert isinstance(result, CommandReply)
    assert result.status == "error"


def test_a_denied_session_refuses_inbound_runs_until_turned_back_on(inline: World) -> None:
    say(inline, "/send off")
    refused = say(inline, "hello")
    assert isinstance(refused, ToolFailure)
    assert refused.error == "send blocked by session policy"
    say(inline, "/send on")
    assert isinstance(say(inline, "hello"), SendResult)


def test_a_message_that_merely_mentions_the_command_is_a_normal_message(inline: World) -> None:
    assert isinstance(say(inline, "how do I use /send off?"), SendResult)


@pytest.mark.parametrize("sender", ["7", "stranger-owner"])
def test_stop_is_for_the_sessions_own_sender_and_owners(world: WorldFactory, sender: str) -> None:
    w = world({"commands": {"ownerAllowFrom": ["telegram:stranger-owner"]}})
    queued = say(w, "hello")
    assert isinstance(queued, SendResult)
    result = say(w, "/stop", sender=sender)
    assert isinstance(result, CommandReply)
    assert result.wire() == {"command": "stop", "status": "ok", "sessionKey": KEY, "aborted": [queued.run_id]}
    assert w.store.runs.get(queued.run_id).status == "aborted"  # type: ignore[union-attr]


def test_stop_from_anyone_else_is_refused_and_stops_nothing(store: Store, inline: World) -> None:
    queued = say(inline, "hello")
    assert isinstance(queued, SendResult)
    result = say(inline, "/stop", sender="8")
    assert isinstance(result, CommandReply)
    assert (result.status, result.error) == (
        "error",
        "/stop is for owners (commands.ownerAllowFrom) and the session's own sender",
    )
    assert store.runs.get(queued.run_id).status == "queued"  # type: ignore[union-attr]


# --- reading a message as a command ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "rest"),
    [
        ("/status", "/status", ""),
        ("/STATUS", "/status", ""),
        ("  /queue: interrupt ", "/queue", "interrupt"),
        ("/queue:interrupt", "/queue", "interrupt"),
        ("/steer be brief\nand kind", "/steer", "be brief\nand kind"),
        ("/Subagents Info Weather", "/subagents", "Info Weather"),
    ],
)
def test_a_command_is_read_as_the_release_normalizes_it(text: str, name: str, rest: str) -> None:
    """The name in any case and with an optional colon; the arguments as written."""
    assert parse(text) == Invocation(name, rest)


@pytest.mark.parametrize(
    "text",
    ["/send on", "/stop", "/queue", "/steer x", "/tell x", "/status", "/subagents", "/agents", "/session"],
)
def test_every_command_is_one(text: str) -> None:
    assert is_command(text)


@pytest.mark.parametrize("text", ["/statusx", "/help", "hello /status", "status", "", "/"])
def test_other_messages_are_not_commands(text: str) -> None:
    assert not is_command(text)


@pytest.mark.parametrize(
    "command",
    ["/status", "/queue", "/queue steer", "/subagents list", "/agents", "/session unbind", "/tell hi"],
)
def test_every_command_is_refused_to_anyone_but_owners_and_the_own_sender(
    dispatcher: InlineDispatcher, command: str, inline: World
) -> None:
    result = say(inline, command, sender="8")
    assert isinstance(result, CommandReply)
    name = {"/tell": "/steer"}.get(command.split()[0], command.split()[0])
    assert (result.status, result.error) == (
        "error",
        f"{name} is for owners (commands.ownerAllowFrom) and the session's own sender",
    )
    assert dispatcher.heads == []


def test_an_owner_writing_in_another_chat_may_run_them(world: WorldFactory) -> None:
    w = world({"commands": {"ownerAllowFrom": ["telegram:boss"]}})
    result = say(w, "/status", sender="boss")
    assert isinstance(result, CommandReply)
    assert result.status == "ok"


def test_an_owner_sender_behind_a_token_that_is_no_owners_is_not_one(world: WorldFactory) -> None:
    w = world({"commands": {"ownerAllowFrom": ["telegram:boss"]}})
    ctx = ToolContext.for_caller(w, KEY, owner=False)
    result = receive(
        ctx, InboundMessageParams(message="/status", channel="telegram", sender_id="boss", timeout_seconds=0)
    )
    assert isinstance(result, CommandReply)
    assert result.status == "error"
