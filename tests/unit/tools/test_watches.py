"""Watches and notices (docs/contract.md §10, "Watches and notices"): a session that sends with ``watch:
true``, or that spawned a child, is told in its next turn when someone else changes the session it watches,
once per pair, and its turn's commit acknowledges the notice as the release acknowledges it; and
``sessions_list`` rows carry each session's ``stateVersion``."""

from __future__ import annotations

from typing import Any

from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain import state_events
from clawbus.shared.runner.tool_schemas import parameters
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.list_schema import SessionsListResult
from clawbus.shared.wire.models import InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World

WATCHER = "agent:main:main"
TARGET = "agent:main:other"


def as_session(ctx: ToolContext, key: str) -> ToolContext:
    return ToolContext.for_caller(ctx, key)


def human(ctx: ToolContext, key: str, text: str = "hello") -> None:
    """A person's message to ``key``: the change a watcher is told of."""
    receive(as_session(ctx, key), InboundMessageParams(message=text, channel="webchat", timeout_seconds=0))


def send(ctx: ToolContext, key: str, **args: Any) -> SendResult:
    sent = TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": key, "message": "ping", "timeoutSeconds": 0, **args}
    )
    assert isinstance(sent, SendResult), sent
    return sent


def run_all(w: World) -> None:
    w.drain(follow_inline=True)


def version(store: Store, key: str) -> int:
    return store.state.version(key)


def cursor(store: Store, target: str, watcher: str) -> tuple[int, ...] | None:
    found = store.redis.hget(store.keys.watchers(target), watcher)
    return tuple(int(mark) for mark in found.split(",")) if found else None


def last_user_text(store: Store, key: str) -> str:
    return next(m.text for m in reversed(store.transcripts.last(key, 50)) if m.role == "user")


def watching(w: World) -> None:
    """TARGET exists, with changes of its own, and WATCHER watches it from its version now."""
    ctx = w.context("main")
    human(ctx, TARGET)
    run_all(w)
    assert send(ctx, TARGET, watch=True).watched is True
    run_all(w)


# --- registration and the send's result ---------------------------------------------------------------


def test_a_send_asked_to_watch_says_watched_and_one_not_asked_says_nothing(ctx: ToolContext) -> None:
    human(ctx, TARGET)
    watched = send(ctx, TARGET, watch=True).wire()
    assert list(watched)[-1] == "watched"
    assert watched["watched"] is True
    assert "watched" not in send(ctx, TARGET).wire()
    assert "watched" not in send(ctx, TARGET, watch="true").wire()


def test_a_session_cannot_watch_itself(ctx: ToolContext) -> None:
    sent = send(ctx, "main", watch=True)
    assert sent.watched is False
    assert isinstance(ctx.store, Store)
    assert cursor(ctx.store, WATCHER, WATCHER) is None


def test_a_watch_starts_at_the_targets_version_when_the_send_is_accepted(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    child = TOOLS["sessions_spawn"].invoke(ctx, {"task": "hi", "label": "kid"})
    assert isinstance(child, SpawnResult)
    key = child.child_session_key
    run_all(inline)
    peer = as_session(ctx, TARGET)
    human(ctx, TARGET)
    run_all(inline)
    now = version(store, key)
    assert now > 0
    send(peer, key, watch=True)
    assert cursor(store, key, TARGET) == (now, now, now)


def test_watching_again_keeps_a_pending_notice_pending(ctx: ToolContext, store: Store, inline: World) -> None:
    watching(inline)
    since = version(store, TARGET)
    human(ctx, TARGET)
    send(ctx, TARGET, watch=True)
    assert store.state.notices(WATCHER) == {TARGET: since}


def test_the_model_is_offered_watch() -> None:
    assert parameters(TOOLS["sessions_send"])["properties"]["watch"]["type"] == "boolean"


# --- notices ------------------------------------------------------------------------------------------


def test_a_persons_messages_to_a_watched_session_are_recorded_and_leave_one_notice_per_pair(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    watching(inline)
    since = version(store, TARGET)
    for text in ("one", "two", "three"):
        human(ctx, TARGET, text)
    assert version(store, TARGET) == since + 3
    assert store.state.notices(WATCHER) == {TARGET: since}
    # The notice covers the first change; the last is the material one.
    assert cursor(store, TARGET, WATCHER) == (since, since + 1, since + 3)


def test_the_notice_reaches_the_watchers_next_turn_once_and_its_commit_acknowledges_it(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    watching(inline)
    since = version(store, TARGET)
    human(ctx, TARGET)
    human(ctx, WATCHER, "what now?")
    run_all(inline)
    assert last_user_text(store, WATCHER) == f"{state_events.notice_line(TARGET, since)}\n\nwhat now?"
    assert store.state.notices(WATCHER) == {}
    assert cursor(store, TARGET, WATCHER) == (since + 1, since + 1, since + 1)
    human(ctx, WATCHER, "and now?")
    run_all(inline)
    assert last_user_text(store, WATCHER) == "and now?"


def test_changes_made_after_the_notice_are_noticed_again_from_what_it_covered(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    """The release acknowledges the notice's frozen watermark, never the head: a change that came while the
    notice waited (or its turn ran) is told once more, from there."""
    watching(inline)
    since = version(store, TARGET)
    human(ctx, TARGET)
    human(ctx, TARGET)
    human(ctx, WATCHER, "first")
    run_all(inline)
    assert store.state.notices(WATCHER) == {TARGET: since + 1}
    human(ctx, WATCHER, "second")
    run_all(inline)
    assert last_user_text(store, WATCHER) == f"{state_events.notice_line(TARGET, since + 1)}\n\nsecond"
    assert store.state.notices(WATCHER) == {}


def test_a_spawner_watches_its_child_from_the_spawn(ctx: ToolContext, store: Store, inline: World) -> None:
    child = TOOLS["sessions_spawn"].invoke(ctx, {"task": "hi", "label": "kid"})
    assert isinstance(child, SpawnResult)
    key = child.child_session_key
    assert cursor(store, key, WATCHER) == (1, 1, 1)
    run_all(inline)  # its task's end is recorded, and notifies no one
    assert store.state.notices(WATCHER) == {}
    human(ctx, key)
    assert store.state.notices(WATCHER) == {key: 1}


def test_a_watcher_whose_session_is_gone_is_forgotten_at_the_next_change(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    peer = "agent:main:peer"
    human(ctx, peer)
    human(ctx, TARGET)
    run_all(inline)
    send(as_session(ctx, peer), TARGET, watch=True)
    entry = store.sessions.get(peer)
    assert entry is not None
    store.sessions.delete(entry)
    human(ctx, TARGET)
    assert cursor(store, TARGET, peer) is None
    assert store.state.notices(peer) == {}


def test_deleting_a_session_deletes_its_watchers_and_its_notices(
    ctx: ToolContext, store: Store, inline: World
) -> None:
    watching(inline)
    human(ctx, TARGET)
    target = store.sessions.get(TARGET)
    assert target is not None
    store.sessions.delete(target)
    assert not store.redis.exists(store.keys.watchers(TARGET))
    watcher = store.sessions.get(WATCHER)
    assert watcher is not None
    store.sessions.delete(watcher)
    assert not store.redis.exists(store.keys.notices(WATCHER))


def test_a_session_nobody_watches_or_spawned_still_records_no_message(ctx: ToolContext, store: Store) -> None:
    human(ctx, TARGET)
    assert version(store, TARGET) == 0


# --- sessions_list --------------------------------------------------------------------------------------


def test_list_rows_carry_the_state_version_after_updated_at_and_none_at_zero(
    ctx: ToolContext, inline: World
) -> None:
    child = TOOLS["sessions_spawn"].invoke(ctx, {"task": "hi", "label": "kid"})
    assert isinstance(child, SpawnResult)
    run_all(inline)
    listed = TOOLS["sessions_list"].invoke(ctx, {})
    assert isinstance(listed, SessionsListResult)
    rows = {row["key"]: row for row in listed.wire()["sessions"]}
    kid = rows[child.child_session_key]
    assert kid["stateVersion"] == 2  # spawned, its task completed
    fields = list(kid)
    assert fields.index("stateVersion") == fields.index("updatedAt") + 1
    assert "stateVersion" not in rows["agent:main:main"]
