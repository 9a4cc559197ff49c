"""What a worker process holds: config, store, dispatcher. Built on first use inside the process, so
Celery's prefork children each open their own Redis connections."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

from celery import current_app

from shared.config import Config, load_config
from shared.store import Store
from workers.dispatch import CeleryDispatcher


@dataclass(frozen=True, slots=True)
class WorkerContext:
    config: Config
    store: Store
    dispatcher: CeleryDispatcher


@cache
def _for_pid(pid: int) -> WorkerContext:
    config = load_config()
    return WorkerContext(config, Store.from_config(config), CeleryDispatcher(current_app))


def worker_context() -> WorkerContext:
    return _for_pid(os.getpid())
