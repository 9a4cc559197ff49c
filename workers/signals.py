"""What the worker hooks onto Celery's signals.

Liveness in Redis: a key per worker with a short TTL, refreshed on every Celery heartbeat. Tests and
``/readyz`` read it to know a worker is consuming; operators can use it as a liveness probe.

Garbage collection: the worker freezes what it built as it started, before its pool starts (a prefork
child inherits it frozen), and the process that runs the tasks (the worker's own with the threads pool,
each child with prefork) freezes its heap after each full collection (shared/base/gc_pauses.py).

Logs: Celery installs no handlers of its own (ours format every line), and the lines Celery writes about a
task ("Task clawbus.run[...] succeeded in ...") carry the run, flow or session the task is about.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from celery.signals import (
    heartbeat_sent,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_ready,
    worker_shutdown,
)

from clawbus.shared.adapters import tracing
from clawbus.shared.base.gc_pauses import FrozenHeap, freeze_started_heap
from clawbus.shared.config import Config
from clawbus.shared.domain import logs
from clawbus.shared.store import Store

HEARTBEAT_TTL_SECONDS = 10


def register(config: Config) -> None:
    fleet = Store.from_config(config).fleet
    hostname: list[str] = []

    def beat() -> None:
        if not hostname:
            return
        try:
            fleet.mark_alive(hostname[0], HEARTBEAT_TTL_SECONDS)
        except Exception:  # liveness is advisory: never take the worker down for it
            return

    def ready(sender: Any = None, **_: Any) -> None:
        hostname.append(getattr(sender, "hostname", None) or "worker")
        beat()

    def gone(**_: Any) -> None:
        if hostname:
            try:
                fleet.mark_gone(hostname[0])
            except Exception:
                return

    worker_ready.connect(ready, weak=False)
    heartbeat_sent.connect(lambda **_: beat(), weak=False)
    worker_shutdown.connect(gone, weak=False)


def freeze_heap() -> None:
    # Before the pool starts: the threads pool's tasks run in this process, and a prefork pool's children
    # inherit a heap already frozen. Frozen in a child instead, every page of what it inherited would be
    # written (an object's collector fields) and copied.
    worker_init.connect(lambda **_: _frozen_from_here(), weak=False)
    worker_process_init.connect(lambda **_: FrozenHeap().watch(threading.Event()), weak=False)


def _frozen_from_here() -> None:
    freeze_started_heap()
    FrozenHeap().watch(threading.Event())


def send_traces(config: Config) -> None:
    """A worker sends its spans to ``telemetry.tracing``'s collector, when one is set (a prefork child
    keeps its parent's provider: the SDK restarts its export thread after the fork)."""
    worker_init.connect(lambda **_: tracing.setup(config, "worker"), weak=False)
    worker_process_init.connect(lambda **_: tracing.setup(config, "worker"), weak=False)


def route_logs(config: Config) -> None:
    """Connected, ``setup_logging`` stops Celery (worker and beat) from configuring logging itself. The
    level is ``logging.level`` (or ``CLAWBUS_LOG_LEVEL``, which ``clawbus worker|beat --loglevel`` sets)."""
    setup_logging.connect(lambda **_: logs.configure(config), weak=False)
    task_prerun.connect(_bind_task, weak=False)
    task_postrun.connect(_unbind_task, weak=False)


# A task's parameter names say what it is about: run(run_id, session_key), deliver(flow_id), ...
_CONTEXT_PARAMETERS = {"run_id": logs.RUN_ID, "flow_id": logs.FLOW_ID, "session_key": logs.SESSION_KEY}
_signatures: dict[str, inspect.Signature] = {}


def _bind_task(
    task: Any = None, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None, **_: Any
) -> None:
    """Each task sets every context key (None unbinds): a retried task sends no postrun signal, and what it
    bound must not stay on the next task's lines."""
    logs.set_context(_task_context(task, args, kwargs or {}))


def _unbind_task(**_: Any) -> None:
    logs.set_context(dict.fromkeys(_CONTEXT_PARAMETERS.values()))


def _task_context(task: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, str | None]:
    try:
        signature = _signatures.get(task.name)
        if signature is None:
            signature = _signatures[task.name] = inspect.signature(task.run)
        given = signature.bind_partial(*args, **kwargs).arguments
    except (AttributeError, TypeError, ValueError):  # not a task of ours, or called with other arguments
        given = {}
    return {
        key: value if isinstance(value := given.get(name), str) else None
        for name, key in _CONTEXT_PARAMETERS.items()
    }
