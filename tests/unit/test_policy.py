"""shared/domain/policy.py: docs/contract.md §5's decision order, rule by rule."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.domain import policy
from clawbus.shared.wire.models import SessionEntry
from tests.conftest import make_config

GROUP = "agent:main:discord:group:42"


def entry(key: str = GROUP, **fields: Any) -> SessionEntry:
    kind = "group" if ":group:" in key or ":channel:" in key else "other"
    return SessionEntry(
        key=key, agent_id=key.split(":")[1], session_id="s", kind=kind, created_at=0, updated_at=0, **fields
    )


def decide(
    rules: list[dict[str, Any]] | None,
    target: SessionEntry,
    default: str | None = None,
    channel: str | None = None,
) -> str:
    send_policy: dict[str, Any] | None = None if rules is None else {"rules": rules}
    if send_policy is not None and default:
        send_policy["default"] = default
    config = make_config({"session": {"sendPolicy": send_policy}} if send_policy is not None else {})
    return policy.decide(config, target, channel=channel)


def deny(**match: str) -> dict[str, Any]:
    return {"action": "deny", "match": match}


def allow(**match: str) -> dict[str, Any]:
    return {"action": "allow", "match": match}


def test_no_configuration_allows() -> None:
    assert decide(None, entry()) == "allow"


@pytest.mark.parametrize(
    ("rule", "target", "expected"),
    [
        (deny(channel="discord"), entry(), "deny"),
        # Older OpenClaw configs name the channel provider or surface.
        (deny(provider="discord"), entry(), "deny"),
        (deny(surface="discord"), entry(), "deny"),
        (deny(provider="slack"), entry(), "allow"),
        (deny(channel="DISCORD"), entry(), "deny"),
        (deny(channel="slack"), entry(), "allow"),
        (deny(chatType="group"), entry(), "deny"),
        (deny(chatType="direct"), entry(), "allow"),
        (deny(chatType="dm"), entry("agent:main:telegram:direct:7"), "deny"),
        (deny(chatType="channel"), entry("agent:main:slack:channel:C1"), "deny"),
        (deny(keyPrefix="discord:"), entry(), "deny"),
        (deny(keyPrefix="agent:main:discord"), entry(), "deny"),
        (deny(keyPrefix="slack:"), entry(), "allow"),
        (deny(rawKeyPrefix="discord:"), entry(), "allow"),
        (deny(rawKeyPrefix="agent:main:discord:"), entry(), "deny"),
        (deny(channel="discord", chatType="direct"), entry(), "allow"),
        (deny(channel="discord", chatType="group"), entry(), "deny"),
        (deny(), entry(), "deny"),
    ],
)
def test_each_match_field(rule: dict[str, Any], target: SessionEntry, expected: str) -> None:
    assert decide([rule], target) == expected


def test_the_recorded_channel_is_matched_for_sessions_without_one_in_the_key() -> None:
    assert decide([deny(channel="webchat")], entry("agent:main:main", last_channel="webchat")) == "deny"


def test_a_matching_deny_beats_a_matching_allow_in_any_order() -> None:
    assert decide([allow(channel="discord"), deny(chatType="group")], entry()) == "deny"
    assert decide([deny(chatType="group"), allow(channel="discord")], entry()) == "deny"


def test_a_matching_allow_beats_the_default() -> None:
    assert decide([allow(channel="discord")], entry(), default="deny") == "allow"


def test_the_default_applies_when_nothing_matches() -> None:
    assert decide([deny(channel="slack")], entry(), default="deny") == "deny"
    assert decide([deny(channel="slack")], entry()) == "allow"


def test_the_sessions_own_override_wins() -> None:
    assert decide([deny()], entry(send_policy="allow")) == "allow"
    assert decide(None, entry(send_policy="deny")) == "deny"


def test_a_delivery_is_judged_by_its_route() -> None:
    assert decide([deny(channel="log")], entry(), channel="log") == "deny"
    assert decide([deny(channel="log")], entry()) == "allow"
