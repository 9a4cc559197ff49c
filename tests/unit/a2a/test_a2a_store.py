"""shared/store/a2a.py: whose each A2A task is, and its push-notification configs, states, lease and due set."""

from __future__ import annotations

import fakeredis

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.store import Store

HOUR_MS = 3_600_000


def retention_s(config: Config) -> int:
    return config.runs.retention_hours * 3600


def a_config(url: str = "http://127.0.0.1:9/hook", token: str = "tok") -> dict[str, str]:
    return {"url": url, "token": token}


# -- whose a task is --


def test_a_task_is_owned_by_its_principal_for_its_agent_only(store: Store, clock: FixedClock) -> None:
    store.a2a.add_task("main", "alice", "run-1", clock.now_ms())
    assert store.a2a.owns("main", "alice", "run-1")
    assert not store.a2a.owns("main", "bob", "run-1")
    assert not store.a2a.owns("research", "alice", "run-1")
    assert not store.a2a.owns("main", "alice", "run-2")


def test_tasks_are_listed_newest_first(store: Store, clock: FixedClock) -> None:
    now = clock.now_ms()
    store.a2a.add_task("main", "alice", "second", now + 10)
    store.a2a.add_task("main", "alice", "first", now)
    store.a2a.add_task("main", "alice", "third", now + 20)
    store.a2a.add_task("main", "bob", "bobs", now + 30)
    assert store.a2a.tasks("main", "alice") == ["third", "second", "first"]
    assert store.a2a.tasks("main", "bob") == ["bobs"]
    assert store.a2a.tasks("research", "alice") == []


def test_tasks_older_than_the_retention_leave_the_index(
    config: Config, store: Store, clock: FixedClock
) -> None:
    now = clock.now_ms()
    store.a2a.add_task("main", "alice", "old", now)
    store.a2a.add_task("main", "alice", "recent", now + HOUR_MS)
    store.a2a.add_task("main", "alice", "new", now + retention_s(config) * 1000 + 1)
    assert store.a2a.tasks("main", "alice") == ["new", "recent"]
    assert not store.a2a.owns("main", "alice", "old")


def test_the_task_index_expires_with_the_retention(
    config: Config, store: Store, redis_client: fakeredis.FakeRedis
) -> None:
    store.a2a.add_task("main", "alice", "run-1", 1)
    ttl = redis_client.ttl(store.keys.a2a_tasks("main", "alice"))
    assert retention_s(config) - 5 <= ttl <= retention_s(config)


# -- push configs --


def test_configs_are_kept_by_id_in_order(store: Store, clock: FixedClock) -> None:
    store.a2a.put_push("run-1", "b", a_config("http://b/"), clock.now_ms())
    store.a2a.put_push("run-1", "a", a_config("http://a/"), clock.now_ms())
    store.a2a.put_push("run-2", "c", a_config("http://c/"), clock.now_ms())
    configs = store.a2a.push_configs("run-1")
    assert list(configs) == ["a", "b"]
    assert configs["a"] == {"url": "http://a/", "token": "tok"}
    assert store.a2a.push_configs("run-3") == {}


def test_a_config_of_the_same_id_replaces_the_old_one_and_its_outcome(
    store: Store, clock: FixedClock
) -> None:
    store.a2a.put_push("run-1", "hook", a_config("http://old/"), clock.now_ms())
    store.a2a.set_push_state("run-1", "hook", {"status": "delivered", "attempts": 1})
    store.a2a.set_push_state("run-1", "other", {"status": "failed", "attempts": 5})
    store.a2a.put_push("run-1", "hook", a_config("http://new/"), clock.now_ms())
    assert store.a2a.push_configs("run-1") == {"hook": {"url": "http://new/", "token": "tok"}}
    assert store.a2a.push_states("run-1") == {"other": {"status": "failed", "attempts": 5}}


def test_a_deleted_config_is_gone_and_deleting_it_again_says_so(store: Store, clock: FixedClock) -> None:
    store.a2a.put_push("run-1", "a", a_config(), clock.now_ms())
    store.a2a.put_push("run-1", "b", a_config(), clock.now_ms())
    assert store.a2a.delete_push("run-1", "a") is True
    assert store.a2a.delete_push("run-1", "a") is False
    assert store.a2a.delete_push("run-1", "never") is False
    assert list(store.a2a.push_configs("run-1")) == ["b"]


def test_configs_expire_with_the_retention(
    config: Config, store: Store, redis_client: fakeredis.FakeRedis
) -> None:
    store.a2a.put_push("run-1", "a", a_config(), 0)
    ttl = redis_client.ttl(store.keys.a2a_push("run-1"))
    assert retention_s(config) - 5 <= ttl <= retention_s(config)


def test_a_new_config_puts_its_task_on_the_due_set_at_its_time(store: Store, clock: FixedClock) -> None:
    now = clock.now_ms()
    store.a2a.put_push("run-1", "a", a_config(), now + 10_000)
    assert store.a2a.pushes_due(now, 10) == []
    assert store.a2a.pushes_due(now + 10_000, 10) == ["run-1"]


# -- what became of each notification --


def test_push_states_are_recorded_per_config(store: Store) -> None:
    store.a2a.set_push_state("run-1", "a", {"status": "pending", "attempts": 1, "error": "HTTP 500"})
    store.a2a.set_push_state("run-1", "b", {"status": "delivered", "attempts": 1})
    store.a2a.set_push_state("run-1", "a", {"status": "delivered", "attempts": 2})
    assert store.a2a.push_states("run-1") == {
        "a": {"status": "delivered", "attempts": 2},
        "b": {"status": "delivered", "attempts": 1},
    }
    assert store.a2a.push_states("run-2") == {}


def test_push_states_expire_with_the_retention(
    config: Config, store: Store, redis_client: fakeredis.FakeRedis
) -> None:
    store.a2a.set_push_state("run-1", "a", {"status": "delivered", "attempts": 1})
    ttl = redis_client.ttl(store.keys.a2a_push_state("run-1"))
    assert retention_s(config) - 5 <= ttl <= retention_s(config)


# -- one attempt at a time --


def test_only_one_attempt_holds_a_tasks_lease(store: Store) -> None:
    assert store.a2a.claim_push("run-1", "first", 60_000)
    assert not store.a2a.claim_push("run-1", "second", 60_000)
    assert store.a2a.claim_push("run-2", "second", 60_000)


def test_the_lease_lapses_after_its_time(store: Store, redis_client: fakeredis.FakeRedis) -> None:
    store.a2a.claim_push("run-1", "first", 60_000)
    assert 59_000 <= redis_client.pttl(store.keys.a2a_push_lease("run-1")) <= 60_000


def test_only_the_owner_releases_the_lease(store: Store) -> None:
    store.a2a.claim_push("run-1", "first", 60_000)
    store.a2a.release_push("run-1", "second")
    assert not store.a2a.claim_push("run-1", "second", 60_000)
    store.a2a.release_push("run-1", "first")
    assert store.a2a.claim_push("run-1", "second", 60_000)


def test_releasing_a_lease_nobody_holds_is_harmless(store: Store) -> None:
    store.a2a.release_push("run-1", "first")
    assert store.a2a.claim_push("run-1", "first", 60_000)


# -- the due set --


def test_tasks_come_due_in_order_of_their_time_up_to_the_limit(store: Store, clock: FixedClock) -> None:
    now = clock.now_ms()
    store.a2a.push_due("later", now - 10)
    store.a2a.push_due("earliest", now - 30)
    store.a2a.push_due("early", now - 20)
    store.a2a.push_due("future", now + 1)
    assert store.a2a.pushes_due(now, 10) == ["earliest", "early", "later"]
    assert store.a2a.pushes_due(now, 2) == ["earliest", "early"]
    assert store.a2a.pushes_due(now + 1, 10) == ["earliest", "early", "later", "future"]


def test_a_task_due_again_moves_to_its_new_time(store: Store, clock: FixedClock) -> None:
    now = clock.now_ms()
    store.a2a.push_due("run-1", now)
    store.a2a.push_due("run-1", now + 60_000)
    assert store.a2a.pushes_due(now, 10) == []
    assert store.a2a.pushes_due(now + 60_000, 10) == ["run-1"]


def test_a_task_done_leaves_the_due_set(store: Store, clock: FixedClock) -> None:
    now = clock.now_ms()
    store.a2a.push_due("run-1", now)
    store.a2a.push_due("run-2", now)
    store.a2a.push_done("run-1")
    store.a2a.push_done("never-due")
    assert store.a2a.pushes_due(now, 10) == ["run-2"]
