"""The session scripts, each through the SessionStore method that calls it: create_session (``create``),
delete_session (``delete``), archive_session (``archive``) and register_child (``add_child``), with what
each leaves in Redis, and the edges their headers name."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import SessionPatch, new_entry
from clawbus.shared.store import Store
from clawbus.shared.store.codec import encode
from clawbus.shared.wire.models import SessionEntry
from tests.support.replies import reply_lost

PARENT = "agent:main:main"
CHILD = "agent:main:subagent:a"
OTHER_CHILD = "agent:main:subagent:b"


def opened(store: Store, config: Config, key: str, **fields: Any) -> SessionEntry:
    entry = new_entry(config, key, store.clock.now_ms()).model_copy(update=fields)
    assert store.sessions.create(entry)
    return entry


def labelled(store: Store, entry: SessionEntry, label: str) -> SessionEntry:
    patched = store.sessions.patch(entry, SessionPatch({"label": label}))
    assert patched is not None
    return patched


def listings(store: Store, entry: SessionEntry) -> dict[str, float | None]:
    """The session's score in each index that lists it, and in the archived sessions' index."""
    k = store.keys
    return {
        index: store.redis.zscore(index, entry.key)
        for index in [*k.session_indexes(entry.agent_id, entry.kind), k.archived_index()]
    }


# -- create_session --


def test_create_session_writes_the_entry_its_id_lookup_and_its_three_indexes(
    store: Store, config: Config
) -> None:
    entry = new_entry(config, CHILD, store.clock.now_ms())
    assert store.sessions.create(entry)
    assert store.redis.hgetall(store.keys.session(CHILD)) == encode(entry)
    assert store.sessions.key_for_session_id(entry.session_id) == CHILD
    assert listings(store, entry) == {
        store.keys.sessions_index(): entry.updated_at,
        store.keys.agent_index("main"): entry.updated_at,
        store.keys.kind_index(entry.kind): entry.updated_at,
        store.keys.archived_index(): None,
    }


def test_create_session_of_a_session_that_exists_leaves_it_as_it_was(
    store: Store, config: Config, clock: FixedClock
) -> None:
    first = opened(store, config, CHILD)
    clock.advance(60)
    again = new_entry(config, CHILD, store.clock.now_ms())
    assert not store.sessions.create(again)
    assert store.redis.hgetall(store.keys.session(CHILD)) == encode(first)
    assert store.sessions.key_for_session_id(again.session_id) is None
    assert store.sessions.key_for_session_id(first.session_id) == CHILD
    assert set(listings(store, first).values()) == {first.updated_at, None}  # not listed as updated now


def test_create_session_sent_again_after_its_reply_was_lost_still_answers_created(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = new_entry(config, CHILD, store.clock.now_ms())
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    created = store.sessions.create(entry)
    monkeypatch.undo()
    assert store.sessions.key_for_session_id(entry.session_id) == CHILD
    assert created


# -- delete_session --


def test_delete_session_removes_the_entry_everything_keyed_by_it_and_its_place_in_its_spawners_children(
    store: Store, config: Config
) -> None:
    k = store.keys
    entry = labelled(store, opened(store, config, CHILD, spawned_by=PARENT), "research")
    store.sessions.add_child(PARENT, CHILD)
    store.sessions.add_child(PARENT, OTHER_CHILD)
    store.redis.xadd(k.transcript(CHILD), {"message": "{}"})
    store.redis.rpush(k.lane(CHILD), "run-1")
    store.redis.hset(k.lease(CHILD), mapping={"runId": "run-1", "owner": "task-1"})
    store.redis.xadd(k.session_runs(CHILD), {"runId": "run-1"})
    store.redis.hset(k.cold(CHILD), mapping={"count": "3"})
    store.sessions.schedule_archive(CHILD, store.clock.now_ms())
    store.redis.zadd(k.archived_index(), {CHILD: store.clock.now_ms()})
    owned = [
        k.session(CHILD),
        k.transcript(CHILD),
        k.lane(CHILD),
        k.lease(CHILD),
        k.session_runs(CHILD),
        k.cold(CHILD),
        k.session_id(entry.session_id),
    ]
    assert store.redis.exists(*owned) == len(owned)
    store.sessions.delete(entry)
    assert store.redis.exists(*owned) == 0
    assert set(listings(store, entry).values()) == {None}
    assert store.redis.zscore(k.archive_due(), CHILD) is None
    assert store.sessions.key_for_label("main", "research") is None
    assert store.sessions.children(PARENT) == [OTHER_CHILD]


def test_delete_session_leaves_its_old_label_to_the_session_that_holds_it_now(
    store: Store, config: Config
) -> None:
    archived = labelled(store, opened(store, config, CHILD), "research")
    assert store.sessions.archive(archived, store.clock.now_ms())  # frees the label; the entry keeps it
    labelled(store, opened(store, config, OTHER_CHILD), "research")
    store.sessions.delete(archived)
    assert not store.sessions.exists(CHILD)
    assert store.sessions.key_for_label("main", "research") == OTHER_CHILD


def test_delete_session_leaves_no_record_of_its_childrens_reports(store: Store, config: Config) -> None:
    entry = opened(store, config, CHILD)
    store.sessions.add_child(CHILD, "agent:main:subagent:grandchild")
    assert store.sessions.record_report(CHILD, "flow-grandchild", "done") is not None
    store.sessions.delete(entry)
    assert store.redis.exists(store.keys.reported(CHILD)) == 0


# -- archive_session --


def test_archive_session_takes_it_out_of_the_listings_and_frees_its_label_but_keeps_its_entry(
    store: Store, config: Config
) -> None:
    entry = labelled(store, opened(store, config, CHILD), "research")
    now = store.clock.now_ms() + 5_000
    store.sessions.schedule_archive(CHILD, now)
    assert store.sessions.archive(entry, now)
    k = store.keys
    assert listings(store, entry) == {
        k.sessions_index(): None,
        k.agent_index("main"): None,
        k.kind_index(entry.kind): None,
        k.archived_index(): now,
    }
    assert store.redis.zscore(k.archive_due(), CHILD) is None
    assert store.sessions.key_for_label("main", "research") is None
    assert store.redis.hget(k.session(CHILD), "archivedAt") == str(now)
    assert store.redis.hget(k.session(CHILD), "label") == "research"
    assert store.sessions.key_for_session_id(entry.session_id) == CHILD


def test_archive_session_of_a_session_gone_only_takes_it_off_the_schedule(
    store: Store, config: Config
) -> None:
    entry = new_entry(config, CHILD, store.clock.now_ms())  # never stored, or deleted since
    store.sessions.schedule_archive(CHILD, store.clock.now_ms())
    assert not store.sessions.archive(entry, store.clock.now_ms())
    assert store.redis.zscore(store.keys.archive_due(), CHILD) is None
    assert not store.sessions.exists(CHILD)  # no partial entry holding archivedAt alone
    assert set(listings(store, entry).values()) == {None}


def test_archive_session_sent_again_after_its_label_was_taken_answers_archived_and_leaves_the_label(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = labelled(store, opened(store, config, CHILD), "research")
    other = opened(store, config, OTHER_CHILD)
    now = store.clock.now_ms()
    # Between the call and its repeat, the label the archive freed goes to the agent's next session.
    take_label = partial(labelled, store, other, "research")
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha, meanwhile=take_label))
    assert store.sessions.archive(entry, now)
    monkeypatch.undo()
    assert store.sessions.key_for_label("main", "research") == OTHER_CHILD
    assert store.redis.zscore(store.keys.archived_index(), CHILD) == now


# -- register_child --


def test_register_child_records_each_child_and_counts_it_pending(store: Store, config: Config) -> None:
    opened(store, config, PARENT)
    assert store.sessions.add_child(PARENT, CHILD) == 1
    assert store.sessions.add_child(PARENT, OTHER_CHILD) == 2
    assert store.sessions.children(PARENT) == [CHILD, OTHER_CHILD]
    assert store.redis.hget(store.keys.session(PARENT), "pendingChildren") == "2"


def test_register_child_sent_again_after_its_reply_was_lost_counts_the_child_once(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened(store, config, PARENT)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    assert store.sessions.add_child(PARENT, CHILD) == 1
    monkeypatch.undo()
    assert store.redis.hget(store.keys.session(PARENT), "pendingChildren") == "1"
    assert store.sessions.children(PARENT) == [CHILD]


def test_register_child_of_a_spawner_with_no_session_counts_nothing(store: Store) -> None:
    """An operator's spawn: the child is remembered, and no entry appears holding a count alone."""
    assert store.sessions.add_child(PARENT, CHILD) == 0
    assert store.sessions.children(PARENT) == [CHILD]
    assert not store.sessions.exists(PARENT)
