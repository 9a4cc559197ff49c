"""shared/base/session_keys.py: docs/contract.md §1, row by row."""

from __future__ import annotations

import pytest

from clawbus.shared.base import session_keys
from clawbus.shared.base.session_keys import SessionKeyError


def canonical(
    raw: str, caller_agent: str = "main", global_scope: bool = False, main_key: str = "main"
) -> str:
    return session_keys.canonical(
        raw, caller_agent=caller_agent, main_key=main_key, global_scope=global_scope
    )


@pytest.mark.parametrize(
    ("stored", "kind"),
    [
        ("agent:main:main", "main"),
        ("agent:main:discord:group:42", "group"),
        ("agent:main:discord:channel:99", "group"),
        ("agent:main:telegram:group:-100123:topic:7", "group"),
        ("agent:main:slack:channel:C1:thread:1700.1", "group"),
        ("agent:main:whatsapp:direct:+15551234", "other"),
        ("agent:main:cron:nightly", "cron"),
        ("agent:main:hook:3f2a", "hook"),
        ("agent:main:node-laptop", "node"),
        ("agent:main:subagent:8d1c5e1e-0000-4000-8000-000000000000", "other"),
        ("agent:research:main", "main"),
    ],
)
def test_classify_sees_through_the_agent_scope(stored: str, kind: str) -> None:
    assert session_keys.classify(stored, "main") == kind


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("main", "agent:main:main"),
        ("cron:nightly", "agent:main:cron:nightly"),
        ("hook:3f2a", "agent:main:hook:3f2a"),
        ("node-laptop", "agent:main:node-laptop"),
        ("discord:group:42", "agent:main:discord:group:42"),
        ("agent:research:discord:direct:bob", "agent:research:discord:direct:bob"),
        ("  agent:MAIN:main  ", "agent:main:main"),
    ],
)
def test_short_forms_are_scoped_to_the_callers_agent(written: str, stored: str) -> None:
    assert canonical(written) == stored


def test_main_resolves_to_the_callers_agent_main_key() -> None:
    assert canonical("main", caller_agent="research") == "agent:research:main"


def test_custom_main_key_is_the_main_session() -> None:
    assert canonical("main", main_key="home") == "agent:main:home"
    assert session_keys.classify("agent:main:home", "home") == "main"


@pytest.mark.parametrize("reserved", ["global", "unknown", "agent:main:global", "agent:main:unknown"])
def test_reserved_keys_are_never_accepted(reserved: str) -> None:
    with pytest.raises(SessionKeyError, match="reserved"):
        canonical(reserved)


def test_global_scope_maps_global_to_main() -> None:
    assert canonical("global", global_scope=True) == "agent:main:main"
    assert canonical("global", caller_agent="research", global_scope=True) == "agent:research:main"


def test_unknown_stays_reserved_under_global_scope() -> None:
    with pytest.raises(SessionKeyError):
        canonical("unknown", global_scope=True)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "agent:main:",
        "agent::main",
        "agent:main:a::b",
        "has space",
        "tab\there",
        "nul\x00",
        "agent:Bad Id:main",
        "agent:-x:main",
        "x" * 600,
    ],
)
def test_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(SessionKeyError):
        canonical(bad)


@pytest.mark.parametrize(
    ("raw", "normalized"), [(" Main ", "main"), ("research_2", "research_2"), ("a-b", "a-b")]
)
def test_agent_ids_are_trimmed_and_lowercased(raw: str, normalized: str) -> None:
    assert session_keys.normalize_agent_id(raw) == normalized


@pytest.mark.parametrize("bad", ["", "-lead", "_lead", "a" * 65, "sp ace", "dot.ted"])
def test_invalid_agent_ids_get_the_spec_text(bad: str) -> None:
    with pytest.raises(SessionKeyError, match=r"Agent IDs must match \[a-z0-9\]\[a-z0-9_-\]\{0,63\}"):
        session_keys.normalize_agent_id(bad)


def test_session_ids_are_uuids() -> None:
    assert session_keys.is_session_id(session_keys.new_session_id())
    assert not session_keys.is_session_id("agent:main:main")


def test_chat_type_and_channel_come_from_channel_keys() -> None:
    assert session_keys.chat_type("agent:main:discord:group:42") == "group"
    assert session_keys.chat_type("agent:main:slack:channel:C1") == "channel"
    assert session_keys.chat_type("agent:main:telegram:direct:7") == "direct"
    assert session_keys.chat_type("agent:main:main") is None
    assert session_keys.channel_of("agent:main:discord:group:42") == "discord"
    assert session_keys.channel_of("agent:main:cron:x") is None


def test_subagent_keys_are_flat_and_recognized() -> None:
    key = session_keys.subagent_key("research")
    assert key.startswith("agent:research:subagent:")
    assert session_keys.is_subagent(key)
    assert session_keys.classify(key, "main") == "other"


def test_the_default_agents_main_session_is_displayed_as_main() -> None:
    assert session_keys.display("agent:main:main", default_agent="main", main_key="main") == "main"
    assert (
        session_keys.display("agent:research:main", default_agent="main", main_key="main")
        == "agent:research:main"
    )


@pytest.mark.parametrize(
    "written",
    [
        "agent:main:Discord:group:X",
        "agent:MAIN:discord:GROUP:x",
        " agent:main:discord:group:x ",
        "Discord:Group:X",
    ],
)
def test_keys_are_lowercased_whole_so_one_session_has_one_key(written: str) -> None:
    assert session_keys.canonical(written, caller_agent="main", main_key="main", global_scope=False) == (
        "agent:main:discord:group:x"
    )


@pytest.mark.parametrize(
    ("key", "threaded"),
    [
        ("agent:main:discord:group:42:thread:7", True),
        ("agent:main:telegram:group:-100:topic:5", True),
        ("agent:main:slack:direct:ann:thread:171.5", True),
        ("agent:main:main:thread:abc", True),  # the release's generic rule: a :thread:<id> suffix anywhere
        ("agent:main:discord:group:42", False),
        ("agent:main:main", False),
        ("agent:main:cron:topic:5", False),  # a topic only in a chat's key
        ("agent:main:thread", False),
    ],
)
def test_a_session_of_a_thread_or_topic_is_told_from_its_key(key: str, threaded: bool) -> None:
    assert session_keys.in_thread(key) is threaded
