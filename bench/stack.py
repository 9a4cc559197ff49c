"""The processes a benchmark runs against, as context managers that always stop what they started.

One private redis-server and one clawbus API live for the whole run; workers (clawbus's or the bare
Celery baseline's) are started per measurement so the two never compete for the machine's cores.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis
from celery import Celery
from clawbus_client import APIError, Client

from bench import bare_celery
from bench.stats import Latency, timed_calls
from clawbus.api.processes import free_port, wait_for
from clawbus.shared.config import Config, load_config
from clawbus.shared.store.keys import RedisKeys
from tests.support.processes import RedisServer, Role, role_env, write_config

TOKEN = "bench-token"
# Echo runtime (the default model) for the one agent: the figures measure clawbus, not a model. Five
# reply-back turns: figure 4 times the longest exchange the contract allows.
CLAWBUS_CONFIG: dict[str, Any] = {
    "agents": {"list": [{"id": "main", "default": True}]},
    "session": {"agentToAgent": {"maxPingPongTurns": 5}},
    "tools": {"sessions": {"visibility": "agent"}},  # the benchmark's sessions all belong to main
}
READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0
# The API as an operator runs it on this machine: a process per core (docs/architecture.md). One process
# tops out near one core's worth of requests, which two workers outrun.
API_PROCESSES = 2
# Per-task INFO lines would be a cost the bare worker does not pay.
WORKER_LOGLEVEL = "WARNING"


@dataclass(frozen=True)
class Stack:
    root: Path
    server: RedisServer
    env: dict[str, str]
    api_url: str
    config: Config

    @property
    def redis_url(self) -> str:
        return self.server.url

    @property
    def keys(self) -> RedisKeys:
        return RedisKeys(self.config.redis.prefix)

    def redis(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True)

    def client(self) -> Client:
        return Client(self.api_url, TOKEN)


@contextmanager
def stack(root: Path) -> Iterator[Stack]:
    """redis-server and the clawbus API; no workers yet."""
    server = RedisServer(root / "redis")
    try:
        server.start()
        config_path = write_config(root, CLAWBUS_CONFIG)
        env = role_env(server.url, config_path, root / "home", TOKEN)
        with api(env, root) as url:
            yield Stack(root, server, env, url, load_config(config_path, env))
    finally:
        server.stop()


@contextmanager
def model_stack(stack: Stack, config: dict[str, Any]) -> Iterator[Stack]:
    """The run's Redis with a configuration of its own (agents on slow models) and an API process that
    reads it; workers are started on it as on the run's stack."""
    config_path = write_config(stack.root, config)
    # The stack's own variables (a traced stack's OTEL_*) stay; the configuration is this one.
    env = {**stack.env, **role_env(stack.redis_url, config_path, stack.root / "home", TOKEN)}
    with api(env, stack.root, processes=1) as url:
        yield Stack(stack.root, stack.server, env, url, load_config(config_path, env))


@contextmanager
def clawbus_workers(stack: Stack, count: int) -> Iterator[None]:
    """``count`` worker processes at the defaults a user gets (a threads pool), consuming every queue."""
    with ExitStack() as workers:
        for _ in range(count):
            workers.enter_context(clawbus_worker(stack))
        yield


@contextmanager
def bare_workers(
    stack: Stack,
    count: int,
    events: bool = False,
    *,
    app_url: str | None = None,
    worker_url: str | None = None,
) -> Iterator[Celery]:
    """``count`` bare Celery workers (prefork pools of one); yields the app to enqueue with. ``app_url``,
    ``worker_url``: the app's and the workers' way to the run's Redis (a slow link), if not direct."""
    app = bare_celery.create_app(app_url or stack.redis_url, events)
    try:
        with ExitStack() as workers:
            for _ in range(count):
                workers.enter_context(_bare_worker(stack, app, events, worker_url or stack.redis_url))
            yield app
    finally:
        app.close()


def bare_hop(stack: Stack, calls: int = 30, warmup: int = 3) -> Latency:
    """One bare Celery round trip: what a hop between two runs costs with nothing of clawbus in it."""
    with bare_workers(stack, 1) as app:
        noop = app.tasks[bare_celery.NOOP_TASK]
        return Latency.of(timed_calls(lambda _i: noop.delay().get(timeout=10), calls, warmup))


@contextmanager
def clawbus_worker(stack: Stack, *options: str) -> Iterator[Role]:
    """One clawbus worker process with ``options`` (none: the defaults a user gets)."""
    name = f"bench-{uuid.uuid4().hex[:8]}"
    argv = [
        sys.executable,
        "-m",
        "clawbus.api.cli",
        "worker",
        *options,
        f"--name={name}@%h",
        f"--loglevel={WORKER_LOGLEVEL}",
    ]
    role = Role(argv, stack.env, stack.root / f"{name}.log")
    heartbeat = f"{stack.keys.worker_heartbeat(name)}@*"
    with (
        stack.redis() as client,
        _running(role, lambda: bool(client.keys(heartbeat)), f"worker {name}") as running,
    ):
        yield running


@contextmanager
def _bare_worker(stack: Stack, app: Celery, events: bool, url: str) -> Iterator[None]:
    name = f"bare-{uuid.uuid4().hex[:8]}"
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "bench.bare_celery",
        "worker",
        "--concurrency=1",
        "-P",
        "prefork",
        f"--loglevel={WORKER_LOGLEVEL}",
        "-n",
        f"{name}@%h",
    ]
    env = {
        **os.environ,
        bare_celery.URL_ENV: url,
        bare_celery.EVENTS_ENV: "1" if events else "0",
        "PYTHONUNBUFFERED": "1",
    }
    role = Role(argv, env, stack.root / f"{name}.log")

    def answers() -> bool:
        replies: list[dict[str, Any]] = app.control.ping(timeout=1) or []
        return any(node.startswith(f"{name}@") for reply in replies for node in reply)

    with _running(role, answers, f"bare worker {name}"):
        yield


@contextmanager
def api(env: dict[str, str], root: Path, processes: int = API_PROCESSES) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, "-m", "clawbus.api.cli", "api", f"--port={port}", f"--workers={processes}"]
    role = Role(argv, env, root / f"api-{port}.log")
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with Client(url, TOKEN) as client:
                client.ready()
        except (httpx.HTTPError, APIError):
            return False
        return True

    with _running(role, ready, "API"):
        yield url


@contextmanager
def _running(role: Role, ready: Callable[[], bool], what: str) -> Iterator[Role]:
    """Start ``role``, wait (with a deadline) until ``ready``, and stop it however the block ends."""
    role.start()
    try:
        wait_for(lambda: ready() or role.exited(), READY_TIMEOUT_S, what=f"{what} ready")
        if role.exited():
            raise RuntimeError(f"{what} exited early:\n{role.output()[-3000:]}")
        yield role
    finally:
        role.stop(STOP_GRACE_S)


def pids_of(*patterns: bytes) -> list[int]:
    """Processes whose command line holds every pattern (arguments NUL-separated)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if all(pattern in argv for pattern in patterns):
                found.append(int(entry.name))
    return found


def api_pid(url: str) -> int:
    """The process serving ``url``: ``clawbus api`` with one worker serves in its own process."""
    port = url.rsplit(":", 1)[1]
    found = pids_of(b"clawbus.api.cli\0api\0", f"--port={port}\0".encode())
    if not found:
        raise RuntimeError(f"no API process on port {port}")
    return found[0]
