"""What a worker process holds: config, store, dispatcher. Built on first use inside the process, so
Celery's prefork children each open their own Redis connections, and a threads pool shares one."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from celery import current_app

from clawbus.shared.config import load_config
from clawbus.shared.ports.context import Context
from clawbus.shared.store import Store
from clawbus.shared.store.connection import WORKER_RETRIES
from clawbus.workers.dispatch import CeleryDispatcher


@dataclass(frozen=True, slots=True)
class WorkerContext(Context):
    # A run task performs its flow's next step itself (workers.lanes.run_and_follow). The inline test
    # harness may turn it off, to see each step go through its own task.
    follow_inline: bool = True


_contexts: dict[int, WorkerContext] = {}
_lock = threading.Lock()


def worker_context() -> WorkerContext:
    """The process's one context, shared by every thread of a threads pool (its Redis client pools
    connections and is thread-safe); the first task of a process builds it, once."""
    pid = os.getpid()
    context = _contexts.get(pid)
    if context is None:
        with _lock:
            context = _contexts.get(pid)
            if context is None:
                config = load_config()
                # A worker's accepts (a flow's next run) answer no client: one a failover loses is made
                # again when the flow is advanced (docs/architecture.md, "Redis under Sentinel"), so they
                # do not wait for replicas, and a replica that is away stalls no flow.
                store = Store.from_config(config, retries=WORKER_RETRIES, replica_acks=0)
                dispatcher = CeleryDispatcher(current_app, retries=WORKER_RETRIES)
                context = _contexts[pid] = WorkerContext(config, store, dispatcher)
    return context
