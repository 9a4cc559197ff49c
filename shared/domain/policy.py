"""Send policy (docs/contract.md §5): may a run target this session, may a delivery go out to this route.

Pure: config and entries in, a decision out.
"""

from __future__ import annotations

from typing import Literal

from clawbus.shared.base import session_keys
from clawbus.shared.config import Config, SendPolicyMatch
from clawbus.shared.wire.models import SessionEntry

Decision = Literal["allow", "deny"]
BLOCKED = "send blocked by session policy"


def decide(config: Config, entry: SessionEntry, *, channel: str | None = None) -> Decision:
    """The session's own override wins; no config allows; the first matching deny denies; any matching
    allow allows; else the configured default, else allow. ``channel`` overrides the session's channel
    (a delivery is judged by the route it takes)."""
    if entry.send_policy:
        return entry.send_policy
    policy = config.session.send_policy
    if policy is None:
        return "allow"
    route = (
        channel or entry.channel or entry.last_channel or session_keys.channel_of(entry.key) or ""
    ).lower()
    chat_type = entry.chat_type or session_keys.chat_type(entry.key)
    allowed = False
    for rule in policy.rules:
        if _matches(rule.match, entry.key, route, chat_type):
            if rule.action == "deny":
                return "deny"
            allowed = True
    if allowed:
        return "allow"
    return policy.default or "allow"


def _matches(match: SendPolicyMatch, key: str, channel: str, chat_type: str | None) -> bool:
    if match.channel is not None and match.channel.lower() != channel:
        return False
    if match.chat_type is not None:
        wanted = "direct" if match.chat_type == "dm" else match.chat_type
        if wanted != (chat_type or ""):
            return False
    if match.key_prefix is not None:
        prefix = match.key_prefix.lower()
        unscoped = session_keys.parse(key).rest.lower()
        if not (key.lower().startswith(prefix) or unscoped.startswith(prefix)):
            return False
    return match.raw_key_prefix is None or key.lower().startswith(match.raw_key_prefix.lower())
