"""shared/commands/status.py: `/status` answers the session's status card, the text session_status gives."""

from __future__ import annotations

import re

import pytest

from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.subagents_schema import SessionStatusCard
from clawbus.workers.testing import world
from tests.support.commands import Chat

# The process's uptime is read when the card is written: two cards may differ there only.
UPTIME = re.compile(r"^⏱️ Uptime: .*$", re.M)


@pytest.fixture
def chat() -> Chat:
    chat = Chat(world())
    chat.message("hello")
    chat.world.drain()
    return chat


def card(chat: Chat) -> str:
    result = TOOLS["session_status"].invoke(chat.ctx(), {})
    assert isinstance(result, SessionStatusCard)
    return UPTIME.sub("", result.status_text)


def test_status_is_the_sessions_card(chat: Chat) -> None:
    said = chat.command("/status")
    assert (said.command, said.status) == ("/status", "ok")
    assert UPTIME.sub("", said.reply or "") == card(chat)
    assert "🧵 Session: agent:main:telegram:direct:7" in card(chat)
    assert chat.world.dispatcher.heads == []  # no run


def test_status_plugins_says_clawbus_has_none_after_the_card(chat: Chat) -> None:
    said = chat.text("/status plugins")
    assert UPTIME.sub("", said) == f"{card(chat)}\n\n⚠️ /status plugins: clawbus loads no plugins."


def test_any_other_argument_is_an_unknown_subcommand_after_the_card(chat: Chat) -> None:
    said = chat.text("/status everything")
    assert said.endswith("\n\n⚠️ Unknown /status subcommand. Try /status or /status plugins.")
    assert said.startswith("🦞 clawbus")
