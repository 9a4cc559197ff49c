"""The session-key grammar of docs/contract.md §1: parse, classify, resolve and display keys.

Every key is stored in its agent-scoped form ``agent:<agentId>:<rest>``. Callers may pass short forms
(``main``, ``cron:<job>``, ``discord:group:42``); those are relative to the caller's agent. Pure functions
only: looking a ``sessionId`` up in Redis is the store's job.
"""

from __future__ import annotations

import functools
import re
import uuid
from dataclasses import dataclass
from typing import Literal

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.base.text import CONTROL_CLASS

AGENT_ID_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_AGENT_ID_RE = re.compile(AGENT_ID_PATTERN)
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# Keys travel in URLs, log lines and model prompts: no whitespace, no control characters, bounded length.
_KEY_CHARS_RE = re.compile(rf"^[^\s{CONTROL_CLASS}]+$")
MAX_KEY_LENGTH = 512
# A key as written may be short (``cron:x``); stored, it gains ``agent:<agentId>:`` (an id is at most 64).
_MAX_STORED_LENGTH = MAX_KEY_LENGTH + len("agent::") + 64

RESERVED_KEYS = frozenset({"global", "unknown"})

# The grammar as regular expressions, for published schemas (the API's path and query parameters):
# colon-separated segments that are not empty, no whitespace or control characters, ``agent:<agentId>:<rest>``
# in full when it starts with ``agent:`` (any case: keys are lowercased), and no reserved key. ``KEY_SHAPE``
# is what an engine without look-around (pydantic's) can check; ``parse`` and ``canonical`` check the rest.
_SEGMENT = rf"[^\s:{CONTROL_CLASS}]+"
_SEGMENTS = rf"{_SEGMENT}(?::{_SEGMENT})*"
_RESERVED = "|".join(sorted(RESERVED_KEYS))
KEY_SHAPE = rf"^{_SEGMENTS}$"
KEY_PATTERN = (
    rf"^(?!(?:{_RESERVED})$)(?!agent:[^:]*:(?:{_RESERVED})$)"
    rf"(?:agent:[A-Za-z0-9][A-Za-z0-9_-]{{0,63}}:{_SEGMENTS}|(?!agent:){_SEGMENTS})$"
)
CURRENT = "current"
MAIN_ALIAS = "main"

SessionKind = Literal["main", "group", "cron", "hook", "node", "other"]
SESSION_KINDS: tuple[SessionKind, ...] = ("main", "group", "cron", "hook", "node", "other")
ChatType = Literal["direct", "group", "channel"]


class SessionKeyError(ClawbusError, ValueError):
    """A key that does not follow the grammar; the message is shown to callers as is."""


@dataclass(frozen=True, slots=True)
class SessionKey:
    agent_id: str
    rest: str

    @property
    def key(self) -> str:
        return f"agent:{self.agent_id}:{self.rest}"


def normalize_agent_id(raw: str) -> str:
    agent_id = raw.strip().lower()
    if not _AGENT_ID_RE.match(agent_id):
        raise SessionKeyError(f'Invalid agentId "{raw}". Agent IDs must match [a-z0-9][a-z0-9_-]{{0,63}}.')
    return agent_id


def is_session_id(value: str) -> bool:
    return bool(_UUID_RE.match(value.strip()))


def new_session_id() -> str:
    return str(uuid.uuid4())


@functools.lru_cache(maxsize=4096)
def parse(key: str) -> SessionKey:
    """Split a stored (agent-scoped) key; raises SessionKeyError for anything else. Cached: a send parses
    the same few keys a dozen times (visibility, policy, channels, lanes), and a key's parts never change
    (an invalid key raises each time; lru_cache keeps no exceptions)."""
    _check_characters(key)
    parts = key.split(":", 2)
    if len(parts) != 3 or parts[0] != "agent":
        raise SessionKeyError(f"Invalid session key: {key!r} (expected agent:<agentId>:<rest>)")
    agent_id = normalize_agent_id(parts[1])
    rest = parts[2]
    if not rest or any(not segment for segment in rest.split(":")):
        raise SessionKeyError(f"Invalid session key: {key!r} (empty segment)")
    if rest in RESERVED_KEYS:
        raise SessionKeyError(f'Session key "{rest}" is reserved')
    return SessionKey(agent_id, rest)


def canonical(raw: str, *, caller_agent: str, main_key: str, global_scope: bool) -> str:
    """Turn what a caller wrote into the stored key form.

    ``main`` (and ``global`` when ``session.scope = "global"``) means the caller agent's main session;
    other short forms are scoped to the caller's agent. ``current`` and session ids are resolved by the
    caller of this function, which knows the caller's session and the store. Keys are lowercased whole, as
    OpenClaw does: ``agent:main:Discord:group:X`` is ``agent:main:discord:group:x``.
    """
    value = raw.strip().lower()
    if value == MAIN_ALIAS or (global_scope and value == "global"):
        return SessionKey(caller_agent, main_key).key
    if value in RESERVED_KEYS:
        raise SessionKeyError(f'Session key "{value}" is reserved')
    if value.startswith("agent:"):
        return parse(value).key
    _check_characters(value, MAX_KEY_LENGTH)
    return parse(f"agent:{caller_agent}:{value}").key


def classify(key: str, main_key: str) -> SessionKind:
    """Kind of a stored key, looking through the ``agent:<id>:`` scope (OpenClaw did not; that was a bug)."""
    rest = parse(key).rest
    if rest == main_key:
        return "main"
    if rest.startswith("cron:"):
        return "cron"
    if rest.startswith("hook:"):
        return "hook"
    if rest.startswith(("node-", "node:")):
        return "node"
    if chat_type(key) in ("group", "channel"):
        return "group"
    return "other"


def chat_type(key: str) -> ChatType | None:
    """``group``/``channel``/``direct`` for channel keys (``<channel>:<type>:<id>[:thread:<n>]``)."""
    segments = parse(key).rest.split(":")
    if len(segments) >= 3 and segments[1] in ("group", "channel", "direct"):
        kind = segments[1]
        return "group" if kind == "group" else "channel" if kind == "channel" else "direct"
    return None


def channel_of(key: str) -> str | None:
    """The chat channel spelled in a channel key (``agent:x:discord:group:1`` -> ``discord``)."""
    if chat_type(key) is None:
        return None
    return parse(key).rest.split(":", 1)[0]


def peer_of(key: str) -> str | None:
    """The chat id spelled in a channel key (``agent:x:discord:group:123:thread:9`` -> ``123``)."""
    if chat_type(key) is None:
        return None
    return parse(key).rest.split(":")[2]


def thread_of(key: str) -> str | None:
    """The thread or topic a channel key is in (``...:group:123:thread:9`` -> ``9``)."""
    if chat_type(key) is None:
        return None
    segments = parse(key).rest.split(":")
    return segments[4] if len(segments) >= 5 and segments[3] in ("thread", "topic") else None


def in_thread(key: str) -> bool:
    """A session of one thread or topic of a chat: a channel key's ``:thread:<n>``/``:topic:<n>``
    (``thread_of``), or a ``:thread:<n>`` suffix on any key, as the release's generic rule reads it
    (``parseThreadSessionSuffix``: the last ``:thread:`` with something after it)."""
    if thread_of(key) is not None:
        return True
    marker = key.lower().rfind(":thread:")
    return marker != -1 and marker + len(":thread:") < len(key)


def main_key_of(agent_id: str, main_key: str) -> str:
    return SessionKey(agent_id, main_key).key


def subagent_key(agent_id: str) -> str:
    return SessionKey(agent_id, f"subagent:{uuid.uuid4()}").key


def is_subagent(key: str) -> bool:
    return parse(key).rest.startswith("subagent:")


def display(key: str, *, default_agent: str, main_key: str) -> str:
    """How a key is shown to callers: the default agent's main session is just ``main``."""
    return MAIN_ALIAS if key == main_key_of(default_agent, main_key) else key


def _check_characters(key: str, limit: int = _MAX_STORED_LENGTH) -> None:
    if not key or len(key) > limit:
        raise SessionKeyError(f"Invalid session key: must be 1..{MAX_KEY_LENGTH} characters")
    if not _KEY_CHARS_RE.match(key):
        raise SessionKeyError("Invalid session key: whitespace and control characters are not allowed")
