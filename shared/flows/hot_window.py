"""Transcripts' hot window (docs/contract.md §3, docs/architecture.md "Hot and cold transcripts"): Redis
keeps a session's newest ``session.hotMessages`` messages; older ones move to its cold file. A worker
moves them after a run's commit, once the stream is a tenth past the window (so a move carries many
messages, not one at a time); the reaper moves idle sessions' transcripts out whole."""

from __future__ import annotations

import logging

from clawbus.shared.config import Config
from clawbus.shared.ports.storage import ColdStoreUnavailable, Storage
from clawbus.shared.ports.storage.transcripts import Transcripts
from clawbus.shared.wire.models import SessionEntry

log = logging.getLogger(__name__)

DAY_MS = 86_400_000


def slack(hot_messages: int) -> int:
    """How far past the window a stream grows before a move."""
    return max(hot_messages // 10, 10)


def after_commit(config: Config, store: Storage, session: SessionEntry | None, hot_length: int) -> int:
    """Move the session's older messages out if its stream (``hot_length`` long, as the commit found it) is
    past the window; how many moved."""
    if session is None:
        return 0
    keep = config.session.hot_messages
    if hot_length <= keep + slack(keep):
        return 0
    return move(store.transcripts, session, keep)


def move(transcripts: Transcripts, session: SessionEntry, keep: int) -> int:
    """How many moved; 0 when the cold store refused: the messages stay hot (the window grows) and the
    store has put the session's next move off, so a store that is down costs a warning, not a traceback."""
    try:
        moved = transcripts.move(session.key, session.agent_id, session.session_id, keep)
    except ColdStoreUnavailable as exc:
        log.warning(
            "%s's older messages stay in Redis for now, the move is tried again later: %s", session.key, exc
        )
        return 0
    if moved:
        log.info("moved %d messages of %s to its cold transcript", moved, session.key)
    return moved


def sweep_idle(config: Config, store: Storage, limit: int) -> int:
    """The reaper's share: sessions idle for ``session.idleArchiveDays`` have their whole transcript moved
    out, oldest first, from where the last pass stopped; sessions moved this pass."""
    days = config.session.idle_archive_days
    if days <= 0:
        return 0
    before = store.clock.now_ms() - int(days * DAY_MS)
    swept = 0
    cursor = store.transcripts.idle_cursor()
    for key, updated_at in store.sessions.idle(cursor, before, limit):
        entry = store.sessions.get(key)
        if entry is not None and store.transcripts.hot_length(key):
            move(store.transcripts, entry, 0)
            swept += 1
        cursor = updated_at
    store.transcripts.set_idle_cursor(cursor)
    return swept
