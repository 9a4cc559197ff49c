"""shared/store/sessions.py: entries, indexes merged newest-first, id and label lookups, atomic patch; a script
call sent again after its reply was lost answers as the first did."""

from __future__ import annotations

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import LabelTaken, SessionPatch, new_entry
from clawbus.shared.store import Store
from clawbus.shared.wire.models import SessionEntry
from tests.support.replies import reply_lost


def create(store: Store, config: Config, key: str) -> None:
    entry = new_entry(config, key, store.clock.now_ms())
    store.redis.hset(store.keys.session(key), mapping={k: str(v) for k, v in entry.wire().items()})
    for index in (
        store.keys.sessions_index(),
        store.keys.kind_index(entry.kind),
        store.keys.agent_index("main"),
    ):
        store.redis.zadd(index, {key: entry.updated_at})
    store.redis.set(store.keys.session_id(entry.session_id), key)


def test_recent_merges_several_indexes_newest_first(store: Store, config: Config, clock: FixedClock) -> None:
    keys = ["agent:main:cron:a", "agent:main:hook:b", "agent:main:cron:c", "agent:main:discord:group:d"]
    for key in keys:
        clock.advance(1)
        create(store, config, key)
    assert list(store.sessions.recent(kinds=["cron", "hook"], page=1)) == [keys[2], keys[1], keys[0]]
    assert list(store.sessions.recent(agent_id="main", page=2)) == keys[::-1]
    assert list(store.sessions.recent(agent_id="research")) == []


def test_recent_stops_at_the_activity_floor(store: Store, config: Config, clock: FixedClock) -> None:
    create(store, config, "agent:main:cron:old")
    clock.advance(600)
    create(store, config, "agent:main:cron:new")
    floor = clock.now_ms() - 60_000
    assert list(store.sessions.recent(active_since=floor)) == ["agent:main:cron:new"]


def test_get_many_returns_none_for_missing_entries(store: Store, config: Config) -> None:
    create(store, config, "agent:main:cron:a")
    found = store.sessions.get_many(["agent:main:cron:a", "agent:main:cron:gone"])
    assert found[0] is not None
    assert found[0].kind == "cron"
    assert found[1] is None


def test_patch_sets_and_clears_fields(store: Store, config: Config) -> None:
    create(store, config, "agent:main:main")
    entry = store.sessions.get("agent:main:main")
    assert entry is not None
    patched = store.sessions.patch(entry, SessionPatch({"sendPolicy": "deny", "thinkingLevel": "high"}))
    assert patched is not None
    assert patched.send_policy == "deny"
    assert patched.thinking_level == "high"
    cleared = store.sessions.patch(patched, SessionPatch({"sendPolicy": None}))
    assert cleared is not None
    assert cleared.send_policy is None
    assert cleared.thinking_level == "high"


def test_labels_are_unique_within_an_agent(store: Store, config: Config) -> None:
    for key in ("agent:main:main", "agent:main:cron:x"):
        create(store, config, key)
    first, second = store.sessions.get_many(["agent:main:main", "agent:main:cron:x"])
    assert first is not None
    assert second is not None
    store.sessions.patch(first, SessionPatch({"label": "home"}))
    assert store.sessions.key_for_label("main", "home") == "agent:main:main"
    with pytest.raises(LabelTaken):
        store.sessions.patch(second, SessionPatch({"label": "home"}))


def test_relabel_frees_the_old_label_and_clear_removes_it(store: Store, config: Config) -> None:
    create(store, config, "agent:main:main")
    entry = store.sessions.get("agent:main:main")
    assert entry is not None
    entry = store.sessions.patch(entry, SessionPatch({"label": "a"}))
    assert entry is not None
    entry = store.sessions.patch(entry, SessionPatch({"label": "b"}))
    assert store.sessions.key_for_label("main", "a") is None
    assert store.sessions.key_for_label("main", "b") == "agent:main:main"
    assert entry is not None
    entry = store.sessions.patch(entry, SessionPatch({"label": None}))
    assert entry is not None
    assert entry.label is None
    assert store.sessions.key_for_label("main", "b") is None


def test_patch_of_a_vanished_session_is_none(store: Store, config: Config) -> None:
    create(store, config, "agent:main:main")
    entry = store.sessions.get("agent:main:main")
    store.redis.delete(store.keys.session("agent:main:main"))
    assert entry is not None
    assert store.sessions.patch(entry, SessionPatch({"label": "x"})) is None


def test_taking_due_archives_sent_again_after_its_reply_was_lost_still_hands_them_over(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call took them off the schedule: the repeat found none, and they were never archived."""
    now = store.clock.now_ms()
    store.sessions.schedule_archive("agent:main:subagent:a", now - 1)
    store.sessions.schedule_archive("agent:main:subagent:later", now + 60_000)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    assert store.sessions.take_due_archives(now) == ["agent:main:subagent:a"]
    monkeypatch.undo()
    assert store.sessions.take_due_archives(now) == []  # taken once: another sweep does not get it too


def test_a_yield_sent_again_after_a_child_ended_its_wait_answers_as_the_first_did(
    store: Store, config: Config
) -> None:
    """The script's call is named by the yielding run alone, so a repeat is the same call again. Without the
    answer kept, it found the wait ended and answered none: the agent was told it had nothing to wait for."""
    create(store, config, "agent:main:main")
    store.sessions.add_child("agent:main:main", "agent:main:subagent:a")
    first = store.sessions.yield_children("agent:main:main", "run-1")
    assert first == (1, 1)
    # Before the client's retry reaches Redis, the child reports and the run that wakes the session is in.
    recorded = store.sessions.record_report("agent:main:main", "flow-a", "done")
    assert recorded is not None
    assert recorded.awaited == 1
    store.sessions.end_wait("agent:main:main", 1)
    assert store.sessions.yield_children("agent:main:main", "run-1") == first
    entry = store.sessions.get("agent:main:main")
    assert entry is not None
    assert entry.waiting is None  # no second wait began
    # Another run's yield is its own: nothing is pending now.
    assert store.sessions.yield_children("agent:main:main", "run-2") is None


def departed_child(config: Config, key: str, now: int) -> SessionEntry:
    entry = new_entry(config, key, now)
    return entry.model_copy(update={"spawned_by": "agent:main:main", "label": key.rsplit(":", 1)[-1]})


def test_a_departed_childs_record_is_kept_for_its_time_and_its_row_for_less(
    store: Store, config: Config, clock: FixedClock
) -> None:
    now = clock.now_ms()
    store.redis.xadd(store.keys.session_runs("agent:main:subagent:a"), {"runId": "r1"})
    store.redis.xadd(store.keys.session_runs("agent:main:subagent:a"), {"runId": "r2"})
    store.sessions.remember_departed(
        departed_child(config, "agent:main:subagent:a", now), now, 60_000, 120_000
    )
    [kept] = store.sessions.departed("agent:main:main", now + 119_999)
    assert (kept.entry.label, kept.run_ids, kept.shown_until) == ("a", ("r2", "r1"), now + 60_000)
    assert store.sessions.departed("agent:main:main", now + 120_000) == []


def test_a_departed_record_written_later_drops_the_lapsed_ones_and_lengthens_the_key(
    store: Store, config: Config, clock: FixedClock
) -> None:
    now = clock.now_ms()
    store.sessions.remember_departed(departed_child(config, "agent:main:subagent:a", now), now, 1_000, 1_000)
    key = store.keys.departed("agent:main:main")
    assert 0 < store.redis.pttl(key) <= 1_000
    later = now + 5_000
    store.sessions.remember_departed(
        departed_child(config, "agent:main:subagent:b", later), later, 1, 600_000
    )
    assert store.redis.hkeys(key) == ["agent:main:subagent:b"]
    assert store.redis.pttl(key) > 1_000
