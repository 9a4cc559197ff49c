"""shared/flows/archive.py: ended run-mode sub-agents are archived archiveAfterMinutes later; 0 never."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.domain.sessions import transcript_path
from clawbus.shared.flows import archive
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.list_schema import SessionsListResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World
from tests.conftest import WorldFactory


def settings(tmp_path: Path, minutes: int, **attachments: Any) -> dict[str, Any]:
    """Children archived ``minutes`` after they end, with attachments, stored under ``tmp_path``."""
    return {
        "session": {"store": str(tmp_path / "store")},
        "agents": {
            "defaults": {"subagents": {"archiveAfterMinutes": minutes}},
            "list": [{"id": "main", "default": True, "workspace": str(tmp_path / "ws")}],
        },
        "tools": {"sessions_spawn": {"attachments": {"enabled": True, **attachments}}},
    }


def spawned(w: World, caller: str = "main", **args: Any) -> SpawnResult:
    ctx = w.context(caller)
    result = TOOLS["sessions_spawn"].invoke(
        ctx, {"task": "work", "attachments": [{"name": "a.txt", "content": "data"}], **args}
    )
    assert isinstance(result, SpawnResult)
    w.drain()
    return result


def listed(w: World) -> list[str]:
    result = TOOLS["sessions_list"].invoke(w.context("main"), {})
    assert isinstance(result, SessionsListResult)
    return [row.key for row in result.sessions]


def test_a_session_is_archived_after_the_configured_minutes(
    tmp_path: Path, world: WorldFactory, clock: FixedClock
) -> None:
    w = world(settings(tmp_path, minutes=60))
    child = spawned(w).child_session_key
    attachments_dir = tmp_path / "ws" / ".openclaw" / "attachments"
    assert any(attachments_dir.iterdir())
    clock.advance(59 * 60)
    assert archive.sweep(w.config, w.store) == []
    assert child in listed(w)
    clock.advance(61)
    assert archive.sweep(w.config, w.store) == [child]
    assert child not in listed(w)
    entry = w.store.sessions.get(child)
    assert entry is not None
    assert entry.archived_at == clock.now_ms()
    exported = Path(transcript_path(w.config.store_url(), entry)).read_text().splitlines()
    assert [json.loads(line)["role"] for line in exported] == ["user", "assistant"]
    # Moved out of Redis, not copied: the transcript reads back whole from its file.
    assert w.store.transcripts.hot_length(child) == 0
    assert [m.role for m in w.store.transcripts.all(child)] == ["user", "assistant"]
    assert list(attachments_dir.iterdir()) == []


def test_zero_minutes_never_archives(tmp_path: Path, world: WorldFactory, clock: FixedClock) -> None:
    w = world(settings(tmp_path, minutes=0))
    child = spawned(w).child_session_key
    clock.advance(365 * 24 * 3600)
    assert archive.sweep(w.config, w.store) == []
    assert child in listed(w)


def test_session_mode_children_stay_open_and_are_never_archived(
    tmp_path: Path, world: WorldFactory, clock: FixedClock
) -> None:
    w = world(settings(tmp_path, minutes=1))
    thread = "agent:main:discord:group:42:thread:7"  # a thread-bound child needs a caller in a thread
    child = spawned(w, caller=thread, thread=True).child_session_key
    w.store.sessions.schedule_archive(child, clock.now_ms())  # even if something asked for it
    clock.advance(3600)
    assert archive.sweep(w.config, w.store) == []
    assert child in listed(w)


def test_retained_attachments_stay_when_configured(
    tmp_path: Path, world: WorldFactory, clock: FixedClock
) -> None:
    w = world(settings(tmp_path, minutes=1, retainOnSessionKeep=True))
    spawned(w)
    clock.advance(120)
    archive.sweep(w.config, w.store)
    assert any((tmp_path / "ws" / ".openclaw" / "attachments").iterdir())


def test_archiving_a_child_frees_its_label_for_the_next_one(
    tmp_path: Path, world: WorldFactory, clock: FixedClock
) -> None:
    w = world(settings(tmp_path, minutes=1))
    first = spawned(w, label="research").child_session_key
    ctx = w.context("main")
    taken = TOOLS["sessions_spawn"].invoke(ctx, {"task": "again", "label": "research"})
    assert not isinstance(taken, SpawnResult)  # still held by the first child
    clock.advance(61)
    assert archive.sweep(w.config, w.store) == [first]
    again = TOOLS["sessions_spawn"].invoke(ctx, {"task": "again", "label": "research"})
    assert isinstance(again, SpawnResult)
    assert w.store.sessions.key_for_label("main", "research") == again.child_session_key
