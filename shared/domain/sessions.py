"""Session entries as the domain sees them: creating one, its channel, its transcript path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import Config
from clawbus.shared.wire.models import SessionEntry


class LabelTaken(ClawbusError):
    """Labels are unique within an agent: ``holder`` has this one."""

    def __init__(self, label: str, holder: str) -> None:
        super().__init__(f'label "{label}" is already used by {holder}')
        self.holder = holder


@dataclass(frozen=True, slots=True)
class Departed:
    """A sub-agent its cleanup deleted (``cleanup: "delete"``), as its spawner keeps it for a while: its
    entry as it was then, and the runs it had accepted, newest first (its own records of them went with
    it). The release keeps a deleted child's run in its registry of runs (``subagents list``'s rows and
    totals) until ``shown_until`` (ms), and its tasks in its task registry for longer."""

    entry: SessionEntry
    run_ids: tuple[str, ...]
    shown_until: int


@dataclass(frozen=True, slots=True)
class ReportRecorded:
    """A child's report applied to the session that spawned it (once, however often it is repeated):
    ``awaited`` is the number of the yield it came in for (its run wakes the session), None when it came
    to a session that was not waiting (a follow-up run of its own); ``waiting`` the yield in force now."""

    awaited: int | None
    pending: int
    waiting: int | None
    killed: bool

    @property
    def wakes(self) -> bool:
        """The last report a yield waited for: the session is woken (once: its run has a derived id)."""
        return self.awaited is not None and self.awaited == self.waiting and self.pending == 0


@dataclass(frozen=True, slots=True)
class SessionPatch:
    """Fields to change (camelCase names); ``None`` values are removed. ``label`` goes through the index."""

    values: dict[str, Any]


def new_entry(config: Config, session_key: str, now_ms: int) -> SessionEntry:
    """The fields a session gets when it is first used (kept if it already exists)."""
    parsed = session_keys.parse(session_key)
    return SessionEntry(
        key=session_key,
        agent_id=parsed.agent_id,
        session_id=session_keys.new_session_id(),
        kind=session_keys.classify(session_key, config.session.main_key),
        chat_type=session_keys.chat_type(session_key),
        channel=session_keys.channel_of(session_key),
        created_at=now_ms,
        updated_at=now_ms,
    )


def channel_of(entry: SessionEntry | None, session_key: str, main_key: str) -> str:
    """The row's channel (docs/contract.md §2): cron/hook/node are ``internal``; groups use their recorded
    channel; direct chats (and the main bucket, OpenClaw's direct-chat session) the last inbound channel;
    anything else ``unknown``."""
    kind = entry.kind if entry else session_keys.classify(session_key, main_key)
    if kind in ("cron", "hook", "node"):
        return "internal"
    if kind == "group":
        return (entry.channel if entry else None) or session_keys.channel_of(session_key) or "unknown"
    if entry is None:
        return "unknown"
    if kind == "main" or session_keys.chat_type(session_key) == "direct":
        return entry.last_channel or "unknown"
    return entry.channel or "unknown"


def display_name(entry: SessionEntry, main_key: str) -> str | None:
    """The name a listing shows, as the release derives it: the chat's own name, else the label, else
    ``main`` for a main session and ``<channel>:g-<id>`` for a group."""
    if entry.display_name or entry.label:
        return entry.display_name or entry.label
    if entry.kind == "main":
        return main_key
    if entry.kind == "group":
        rest = session_keys.parse(entry.key).rest.split(":", 2)
        if len(rest) == 3:
            return f"{rest[0]}:g-{rest[2].replace(':', '-')}"
    return None


def transcript_path(store: str, entry: SessionEntry) -> str:
    """``store`` is ``config.store_url()``, resolved once by callers that build many paths."""
    return transcript_location(store, entry.agent_id, entry.session_id)


def transcript_location(store: str, agent_id: str, session_id: str) -> str:
    """A session's JSONL transcript file (OpenClaw's ``transcriptPath``) under a folder or URL."""
    return f"{store.rstrip('/')}/agents/{agent_id}/sessions/{session_id}.jsonl"


@dataclass(frozen=True, slots=True)
class Route:
    channel: str
    to: str | None
    account_id: str | None = None
    thread_id: str | None = None


# The channels whose adapters post into a thread: a Discord thread, a Slack thread, a Telegram forum topic.
THREADED_CHANNELS = ("discord", "slack", "telegram")


def route_of(entry: SessionEntry) -> Route:
    """Where a message for this session is posted: its ``deliveryContext``, else the route of its last
    inbound message, else the channel and chat id its key spells (``discord:group:<id>``), else its own
    ``log`` outbox, where an operator still sees it."""
    context = entry.delivery_context
    thread = session_keys.thread_of(entry.key)
    if context is not None and context.channel:
        return Route(context.channel, context.to, context.account_id, context.thread_id or thread)
    if entry.last_channel:
        return Route(entry.last_channel, entry.last_to, entry.last_account_id, thread)
    channel, peer = session_keys.channel_of(entry.key), session_keys.peer_of(entry.key)
    if channel and peer:
        return Route(channel, peer, thread_id=thread)
    return Route("log", entry.key)
