"""Ending a sub-agent session's life (docs/contract.md §6): deleted at once (``cleanup=delete``), or archived
``archiveAfterMinutes`` after it ended by a sweep over a due-time index (beat runs it; a long ETA task on
the Redis broker would not be reliable).

Archived: the whole transcript moves to its cold JSONL file at its ``transcriptPath`` (out of Redis), its
attachments are removed (unless ``retainOnSessionKeep``), and it leaves ``sessions_list``.
"""

from __future__ import annotations

import logging

from shared.config import Config
from shared.domain import attachments
from shared.ports.storage import Storage
from shared.runner import hot_window
from shared.wire.models import SessionEntry

log = logging.getLogger(__name__)


def discard(config: Config, store: Storage, entry: SessionEntry) -> None:
    """``cleanup: "delete"``: the session goes now, its transcript kept at its ``transcriptPath`` as the
    release keeps a deleted session's (moved out of Redis whole first: a crash before the delete leaves the
    session, which a repeat deletes), its attachments removed."""
    hot_window.move(store, entry, 0)
    _remove_attachments(config, entry)
    store.sessions.delete(entry)


def sweep(config: Config, store: Storage, now_ms: int | None = None) -> list[str]:
    """Archive every session whose time has come by ``now_ms`` (the store's clock if None: what beat's
    sweeps use; a given time is a test clock, or an operator archiving ahead); the keys archived."""
    now = store.clock.now_ms() if now_ms is None else now_ms
    archived = []
    for key in store.sessions.take_due_archives(now):
        entry = store.sessions.get(key)
        if entry is None or entry.mode == "session":  # thread-bound sessions stay open
            continue
        hot_window.move(store, entry, 0)
        if not config.tools.sessions_spawn.attachments.retain_on_session_keep:
            _remove_attachments(config, entry)
        if store.sessions.archive(entry, now):
            archived.append(key)
    return archived


def _remove_attachments(config: Config, entry: SessionEntry) -> None:
    if entry.attachments_dir:
        try:
            attachments.remove(config.workspace(entry.agent_id), entry.attachments_dir)
        except (OSError, ValueError):
            log.exception("could not remove the attachments of %s", entry.key)
