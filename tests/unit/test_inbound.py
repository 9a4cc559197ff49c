"""shared/commands/inbound.py: a chat message creates its session, records its route and runs the agent."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clawbus.shared.commands.inbound import receive
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolError
from clawbus.shared.wire.list_schema import SessionsListResult
from clawbus.shared.wire.models import InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import World


def inbound(w: World, key: str, **fields: object) -> SendResult:
    ctx = w.context(key)
    result = receive(ctx, InboundMessageParams.model_validate({"timeoutSeconds": 0, **fields}))
    assert isinstance(result, SendResult)
    return result


def test_the_first_message_creates_the_session_with_its_route(store: Store, inline: World) -> None:
    result = inbound(inline, "main", message="hi", channel="webchat", to="u1", accountId="a")
    assert result.status == "accepted"
    assert result.session_key == "main"
    entry = store.sessions.get("agent:main:main")
    assert entry is not None
    assert (entry.channel, entry.last_channel, entry.last_to, entry.last_account_id) == (
        "webchat",
        "webchat",
        "u1",
        "a",
    )
    assert entry.delivery_context is not None
    assert entry.delivery_context.to == "u1"


def test_a_later_message_updates_the_last_route_but_keeps_the_session(store: Store, inline: World) -> None:
    inbound(inline, "main", message="one", channel="webchat", to="u1")
    first = store.sessions.get("agent:main:main")
    inbound(inline, "main", message="two", channel="telegram", to="u2")
    second = store.sessions.get("agent:main:main")
    assert first is not None
    assert second is not None
    assert second.session_id == first.session_id
    assert (second.channel, second.last_channel, second.last_to) == ("webchat", "telegram", "u2")


def test_a_message_that_names_no_channel_keeps_the_sessions_route(store: Store, inline: World) -> None:
    inbound(inline, "main", message="one", channel="telegram", to="u1")
    inbound(inline, "main", message="from the console")
    entry = store.sessions.get("agent:main:main")
    assert entry is not None
    assert (entry.last_channel, entry.last_to) == ("telegram", "u1")
    assert entry.delivery_context is not None
    assert entry.delivery_context.to == "u1"


def test_a_group_chats_display_name_is_recorded_and_listed(store: Store, inline: World) -> None:
    key = "discord:group:ops"
    inbound(inline, key, message="one", channel="discord", displayName="Ops room")
    inbound(inline, key, message="two", channel="discord")  # a message that names none
    ctx = inline.context("main")
    rows = TOOLS["sessions_list"].invoke(ctx, {})
    assert isinstance(rows, SessionsListResult)
    assert [row.display_name for row in rows.sessions if row.key.endswith(key)] == ["Ops room"]
    inbound(inline, key, message="three", displayName="Ops (renamed)")
    entry = store.sessions.get(f"agent:main:{key}")
    assert entry is not None
    assert entry.display_name == "Ops (renamed)"


def test_system_sent_is_set_once_a_model_step_committed(store: Store, inline: World) -> None:
    inbound(inline, "main", message="hi")
    before = store.sessions.get("agent:main:main")
    assert before is not None
    assert before.system_sent is None
    inline.drain_runs()
    after = store.sessions.get("agent:main:main")
    assert after is not None
    assert after.system_sent is True


def test_the_agent_replies_into_the_transcript(store: Store, inline: World) -> None:
    inbound(inline, "agent:research:slack:channel:C1", message="status?")
    inline.drain_runs()
    messages = store.transcripts.last("agent:research:slack:channel:c1", 5)
    assert [(m.role, m.text, m.provenance) for m in messages] == [
        ("user", "status?", None),
        ("assistant", "echo: status?", None),
    ]


def test_a_key_of_an_unconfigured_agent_is_refused(store: Store, inline: World) -> None:
    with pytest.raises(ToolError, match='Unknown agent id "ghost"'):
        inbound(inline, "agent:ghost:main", message="hi")
    assert store.redis.keys("*") == []


@pytest.mark.parametrize("name", ["\u008e", "   ", "a\x00b"])
def test_a_display_name_blank_or_with_control_characters_is_refused_naming_the_field(name: str) -> None:
    with pytest.raises(ValidationError, match="displayName"):
        InboundMessageParams.model_validate({"message": "m", "displayName": name})
