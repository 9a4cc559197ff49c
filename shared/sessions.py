"""Session entries as the domain sees them: creating one, its channel, its transcript path."""

from __future__ import annotations

from pathlib import Path

from shared import keys
from shared.config import Config
from shared.models import SessionEntry


def new_entry(config: Config, session_key: str, now_ms: int) -> SessionEntry:
    """The fields a session gets when it is first used (kept if it already exists)."""
    parsed = keys.parse(session_key)
    return SessionEntry(
        key=session_key,
        agent_id=parsed.agent_id,
        session_id=keys.new_session_id(),
        kind=keys.classify(session_key, config.session.main_key),
        chat_type=keys.chat_type(session_key),
        channel=keys.channel_of(session_key),
        created_at=now_ms,
        updated_at=now_ms,
    )


def channel_of(entry: SessionEntry | None, session_key: str, main_key: str) -> str:
    """SPEC 2: cron/hook/node are ``internal``; groups use their recorded channel; direct chats (and the
    main bucket, OpenClaw's direct-chat session) the last inbound channel; anything else ``unknown``."""
    kind = entry.kind if entry else keys.classify(session_key, main_key)
    if kind in ("cron", "hook", "node"):
        return "internal"
    if kind == "group":
        return (entry.channel if entry else None) or keys.channel_of(session_key) or "unknown"
    if entry is None:
        return "unknown"
    if kind == "main" or keys.chat_type(session_key) == "direct":
        return entry.last_channel or "unknown"
    return entry.channel or "unknown"


def transcript_path(store_dir: Path, entry: SessionEntry) -> Path:
    """``store_dir`` is ``config.store_dir()``, resolved once by callers that build many paths."""
    return store_dir / "agents" / entry.agent_id / "sessions" / f"{entry.session_id}.jsonl"
