"""Ending a sub-agent session's life (docs/contract.md §6): deleted at once (``cleanup=delete``), or archived
``archiveAfterMinutes`` after it ended by a sweep over a due-time index (beat runs it; a long ETA task on
the Redis broker would not be reliable).

Archived: the whole transcript moves to its cold JSONL file at its ``transcriptPath`` (out of Redis), its
attachments are removed (unless ``retainOnSessionKeep``), and it leaves ``sessions_list``.
"""

from __future__ import annotations

import logging

from clawbus.shared.config import Config
from clawbus.shared.domain import attachments, subagents
from clawbus.shared.flows import hot_window
from clawbus.shared.ports.storage import Storage
from clawbus.shared.wire.models import SessionEntry
from clawbus.shared.wire.subagents_schema import MAX_RECENT_MINUTES

log = logging.getLogger(__name__)

# With archiveAfterMinutes 0 (never archive), how long a deleted child's row stays in its spawner's
# subagents list: the release's registry sweeps a run with no archive time out this long after its cleanup
# (SESSION_RUN_TTL_MS).
_DEPARTED_UNARCHIVED_MS = 300_000
# How long its tasks stay: the release's task registry keeps them for days, and a list looks back at most
# this far (recentMinutes' bound).
_DEPARTED_TASKS_MS = MAX_RECENT_MINUTES * 60_000


def discard(config: Config, store: Storage, entry: SessionEntry) -> None:
    """``cleanup: "delete"``: the session goes now, its transcript kept at its ``transcriptPath`` as the
    release keeps a deleted session's (moved out of Redis whole first: a crash before the delete leaves the
    session, which a repeat deletes), its attachments removed. Its spawner keeps its row for ``subagents
    list`` a while (``departed_for_ms``)."""
    hot_window.move(store.transcripts, entry, 0)
    _remove_attachments(config, entry)
    if entry.spawned_by is not None:
        shown = departed_for_ms(config, entry.agent_id)
        store.sessions.remember_departed(entry, store.clock.now_ms(), shown, max(shown, _DEPARTED_TASKS_MS))
    store.sessions.delete(entry)


def departed_for_ms(config: Config, agent_id: str) -> int:
    """How long a child deleted at its cleanup keeps its row in its spawner's ``subagents list`` (its
    tasks stay for the list's longest window). The release's registry keeps such a child's run until its
    requester's turn took its completion in, at most until its archive time, ``archiveAfterMinutes`` after
    it ended; clawbus writes the report before the child goes, so only the archive time leaves the row to
    be seen."""
    minutes = subagents.rules(config, agent_id).archive_after_minutes
    return minutes * 60_000 if minutes > 0 else _DEPARTED_UNARCHIVED_MS


def sweep(config: Config, store: Storage, now_ms: int | None = None) -> list[str]:
    """Archive every session whose time has come by ``now_ms`` (the store's clock if None: what beat's
    sweeps use; a given time is a test clock, or an operator archiving ahead); the keys archived."""
    now = store.clock.now_ms() if now_ms is None else now_ms
    archived = []
    for key in store.sessions.take_due_archives(now):
        entry = store.sessions.get(key)
        if entry is None or entry.mode == "session":  # thread-bound sessions stay open
            continue
        hot_window.move(store.transcripts, entry, 0)
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
