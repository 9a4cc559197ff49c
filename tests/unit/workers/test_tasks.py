"""workers/tasks.py: which tasks Flower hears of."""

from __future__ import annotations

import pytest

from clawbus.shared.config import Config
from clawbus.workers import queues, tasks
from clawbus.workers.celery_app import create_app
from clawbus.workers.services import WorkerContext
from clawbus.workers.testing import World


def test_only_the_maintenance_tasks_send_no_task_events() -> None:
    celery = create_app(Config(), include=["clawbus.workers.tasks"])
    celery.loader.import_default_modules()
    ours = {name: task for name, task in celery.tasks.items() if name.startswith("clawbus.")}
    quiet = {name for name, task in ours.items() if not task.send_events}
    assert quiet == {queues.REAP_TASK, queues.ARCHIVE_TASK}


@pytest.fixture
def context(inline: World, monkeypatch: pytest.MonkeyPatch) -> WorkerContext:
    """The tasks' worker context: the test's world."""
    made = WorkerContext(inline.config, inline.store, inline.dispatcher)
    monkeypatch.setattr(tasks, "worker_context", lambda: made)
    return made


@pytest.fixture
def passes(context: WorkerContext, monkeypatch: pytest.MonkeyPatch) -> list[WorkerContext]:
    """The reaper passes the reap task went on to make (each its context)."""
    ran: list[WorkerContext] = []
    monkeypatch.setattr(tasks.reaper, "reap", lambda ctx: ran.append(ctx) or 0)
    return ran


def test_a_reaper_pass_queued_behind_another_skips_until_its_turn_lapses(
    passes: list[WorkerContext], inline: World
) -> None:
    tasks.reap()
    tasks.reap()
    assert len(passes) == 1
    inline.store.redis.delete(inline.store.keys.maintenance_turn(queues.REAP_TASK))  # half an interval on
    tasks.reap()
    assert len(passes) == 2


def test_the_reaper_pass_a_worker_asks_for_on_connecting_always_runs(passes: list[WorkerContext]) -> None:
    tasks.reap()
    tasks.reap(on_connect=True)
    assert len(passes) == 2


def test_a_turn_lapses_by_redis_time(inline: World) -> None:
    fleet = inline.store.fleet
    assert fleet.take_turn(queues.REAP_TASK, 60_000)
    assert not fleet.take_turn(queues.REAP_TASK, 60_000)
    assert 0 < inline.store.redis.pttl(inline.store.keys.maintenance_turn(queues.REAP_TASK)) <= 60_000


def test_beats_passes_carry_no_expiry_a_workers_own_clock_would_judge() -> None:
    schedule = create_app(Config()).conf.beat_schedule
    assert schedule
    assert all("expires" not in entry["options"] for entry in schedule.values())


def test_an_archive_sweep_asked_for_as_of_a_time_always_runs(
    context: WorkerContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    swept: list[int | None] = []
    monkeypatch.setattr(tasks.archive, "sweep", lambda _config, _store, now_ms: swept.append(now_ms) or [])
    tasks.archive_sweep()
    tasks.archive_sweep()  # beat's, queued behind the first: skipped
    tasks.archive_sweep(1_000)
    tasks.archive_sweep(2_000)
    assert swept == [None, 1_000, 2_000]
