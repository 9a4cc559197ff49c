"""workers/tasks.py: which tasks Flower hears of."""

from __future__ import annotations

from shared.config import Config
from workers import queues
from workers.celery_app import create_app


def test_only_the_maintenance_tasks_send_no_task_events() -> None:
    celery = create_app(Config(), include=["workers.tasks"])
    celery.loader.import_default_modules()
    ours = {name: task for name, task in celery.tasks.items() if name.startswith("clawbus.")}
    quiet = {name for name, task in ours.items() if not task.send_events}
    assert quiet == {queues.REAP_TASK, queues.ARCHIVE_TASK}
