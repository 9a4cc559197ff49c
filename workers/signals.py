"""Worker liveness in Redis: a key per worker with a short TTL, refreshed on every Celery heartbeat.

Tests and ``/readyz`` read it to know a worker is consuming; operators can use it as a liveness probe.
"""

from __future__ import annotations

from typing import Any

from celery.signals import heartbeat_sent, worker_ready, worker_shutdown

from shared.config import Config
from shared.store import connect
from shared.store.keys import RedisKeys

HEARTBEAT_TTL_SECONDS = 10


def register(config: Config) -> None:
    keys = RedisKeys(config.redis.prefix)
    client = connect(config.redis.url)
    hostname: list[str] = []

    def beat() -> None:
        if not hostname:
            return
        try:
            client.set(keys.worker_heartbeat(hostname[0]), "alive", ex=HEARTBEAT_TTL_SECONDS)
        except Exception:  # liveness is advisory: never take the worker down for it
            return

    def ready(sender: Any = None, **_: Any) -> None:
        hostname.append(getattr(sender, "hostname", None) or "worker")
        beat()

    def gone(**_: Any) -> None:
        if hostname:
            try:
                client.delete(keys.worker_heartbeat(hostname[0]))
            except Exception:
                return

    worker_ready.connect(ready, weak=False)
    heartbeat_sent.connect(lambda **_: beat(), weak=False)
    worker_shutdown.connect(gone, weak=False)
