"""shared/flows/hot_window.py: a worker keeps each transcript's hot window after its runs' commits, and the
reaper moves idle sessions' transcripts out whole; sessions_history reads one transcript either way."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.commands.inbound import receive
from clawbus.shared.flows import hot_window
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams
from clawbus.workers.testing import World
from tests.conftest import WorldFactory
from tests.support.cold import blocked

SECRET = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def settings(tmp_path: Path, **session: Any) -> dict[str, Any]:
    return {"session": {"store": str(tmp_path / "store"), **session}}


def chat(w: World, key: str, count: int) -> None:
    for i in range(count):
        ctx = w.context(key)
        text = f"message {i}" + (f" with key {SECRET}" if i % 7 == 0 else "")
        receive(ctx, InboundMessageParams(message=text, channel="webchat", to="u1"))
        w.drain()


def history(w: World, key: str, **args: Any) -> dict[str, Any]:
    ctx = w.context("main")
    result = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": key, **args})
    return result.wire()  # type: ignore[union-attr]


def test_runs_past_the_window_leave_at_most_a_tenth_more_in_redis(
    tmp_path: Path, world: WorldFactory
) -> None:
    w = world(settings(tmp_path, hotMessages=10))
    chat(w, "main", 30)  # 60 messages: six windows
    key = "agent:main:main"
    assert 10 <= w.store.transcripts.hot_length(key) <= 10 + hot_window.slack(10)
    assert w.store.transcripts.length(key) == 60
    said = [m.text for m in w.store.transcripts.all(key) if m.role == "user"]
    assert said[0].startswith("message 0")
    assert said[-1] == "message 29"
    assert len(said) == 30


def test_history_across_hot_and_cold_is_the_all_hot_history(tmp_path: Path, world: WorldFactory) -> None:
    """A transcript three windows long, read before and after its older part moved out: limits, tool
    messages and redaction alike."""
    w = world(settings(tmp_path, hotMessages=1000))
    chat(w, "main", 30)
    asks = [{}, {"limit": 5}, {"limit": 25}, {"limit": 60}, {"includeTools": True, "limit": 40}]
    before = [history(w, "main", **ask) for ask in asks]
    entry = w.store.sessions.get("agent:main:main")
    assert entry is not None
    assert hot_window.move(w.store.transcripts, entry, 20) == 40
    assert w.store.transcripts.hot_length("agent:main:main") == 20
    after = [history(w, "main", **ask) for ask in asks]
    assert after == before
    assert SECRET not in str(after)


def test_idle_sessions_move_out_whole_once_and_again_after_new_messages(
    tmp_path: Path, world: WorldFactory, clock: FixedClock
) -> None:
    w = world(settings(tmp_path, idleArchiveDays=2))
    chat(w, "main", 3)
    chat(w, "agent:main:webchat:direct:bob", 2)
    clock.advance(86_400)
    assert hot_window.sweep_idle(w.config, w.store, 100) == 0  # a day idle: not yet
    clock.advance(86_400 + 1)
    assert hot_window.sweep_idle(w.config, w.store, 100) == 2
    assert w.store.transcripts.hot_length("agent:main:main") == 0
    assert w.store.transcripts.length("agent:main:main") == 6
    assert hot_window.sweep_idle(w.config, w.store, 100) == 0  # the cursor moved past them
    chat(w, "main", 1)
    clock.advance(2 * 86_400 + 1)
    assert hot_window.sweep_idle(w.config, w.store, 100) == 1
    assert [m.text for m in w.store.transcripts.all("agent:main:main") if m.role == "user"] == [
        f"message 0 with key {SECRET}",
        "message 1",
        "message 2",
        f"message 0 with key {SECRET}",
    ]


def test_idle_archive_is_off_by_default(tmp_path: Path, world: WorldFactory, clock: FixedClock) -> None:
    w = world(settings(tmp_path))
    chat(w, "main", 2)
    clock.advance(365 * 86_400)
    assert hot_window.sweep_idle(w.config, w.store, 100) == 0
    assert w.store.transcripts.hot_length("agent:main:main") == 4


def test_a_listed_session_moved_out_whole_shows_its_last_messages(
    tmp_path: Path, world: WorldFactory, clock: FixedClock
) -> None:
    w = world(settings(tmp_path, idleArchiveDays=1))
    chat(w, "main", 2)
    clock.advance(86_400 + 1)
    hot_window.sweep_idle(w.config, w.store, 100)
    ctx = w.context("main")
    listed = TOOLS["sessions_list"].invoke(ctx, {"messageLimit": 2}).wire()  # type: ignore[union-attr]
    [row] = listed["sessions"]
    assert [m["role"] for m in row["messages"]] == ["user", "assistant"]


def test_a_cold_store_that_refuses_grows_the_window_with_one_warning_until_it_takes_them_all(
    tmp_path: Path, world: WorldFactory, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = blocked(tmp_path / "store" / "cold")  # session.store's parent is a regular file
    w = world({"session": {"store": str(tmp_path / "store" / "cold"), "hotMessages": 10}})
    key = "agent:main:main"
    with caplog.at_level(logging.WARNING, logger=hot_window.__name__):
        chat(w, "main", 30)
    assert w.store.transcripts.hot_length(key) == 60  # every message kept, in Redis
    [warning] = [r for r in caplog.records if r.name == hot_window.__name__]  # later commits backed off
    assert "stay in Redis" in warning.getMessage()
    assert warning.exc_info is None
    assert w.store.fleet.figures([]).cold_moves_failed == 1

    blocker.unlink()
    clock.advance(10)  # past the first wait
    chat(w, "main", 1)
    assert 10 <= w.store.transcripts.hot_length(key) <= 10 + hot_window.slack(10)
    said = [m.text for m in w.store.transcripts.all(key) if m.role == "user"]
    assert len(said) == 31
    assert [text[: len(f"message {i}")] for i, text in enumerate(said[:30])] == [
        f"message {i}" for i in range(30)
    ]
    assert w.store.fleet.figures([]).cold_move_failure is None
