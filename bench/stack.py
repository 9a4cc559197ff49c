"""The processes a benchmark runs against, as context managers that always stop what they started.

One private redis-server and one clawbus API live for the whole run; workers (clawbus's or the bare
Celery baseline's) are started per measurement so the two never compete for the machine's cores. Workers
of one measurement start together and stop together: a Celery worker's warm shutdown is a second or two of
mostly waiting, which then overlaps instead of adding up. A quick run also forks its roles
(``forked_roles``) and lets their stops finish in the background (``stops_in_background``).
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
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
from tests.support.processes import RedisServer, Role, fork_roles, role_env, write_config

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
def stack(root: Path, api_processes: int = API_PROCESSES) -> Iterator[Stack]:
    """redis-server and the clawbus API; no workers yet."""
    server = RedisServer(root / "redis")
    try:
        server.start()
        config_path = write_config(root, CLAWBUS_CONFIG)
        env = role_env(server.url, config_path, root / "home", TOKEN)
        with api(env, root, api_processes) as url:
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
def forked_roles(enabled: bool) -> Iterator[None]:
    """While the block runs, roles (API, workers, beat) start as children of a fork server that has already
    imported what they import (tests/support/forkserver.py), as the tests start them: a start then costs a
    fraction of a fresh interpreter's 2 s of CPU. The quick run's choice; a full run starts each role as an
    operator does, so the memory and CPU figures are a standalone process's."""
    fork_roles(enabled)
    try:
        yield
    finally:
        fork_roles(False)


# The stops still going on, while a quick run's figures run (None: each stop is waited for where it is made).
_background_stops: list[Future[None]] | None = None


@contextmanager
def stops_in_background(enabled: bool) -> Iterator[None]:
    """While the block runs, the roles a measurement started are sent their stop (a warm shutdown) at its
    end, and the run goes on without waiting for them to exit: each worker's second or two of shutting
    down, mostly waiting, overlaps what comes next instead of adding to the run. Every stop has ended when
    the block ends. The quick run's choice; a full run waits, so nothing of one measurement runs on into
    the next."""
    global _background_stops
    if not enabled:
        yield
        return
    pending: list[Future[None]] = []
    _background_stops = pending
    try:
        yield
    finally:
        _background_stops = None
        for stop in pending:
            stop.result()


@dataclass(frozen=True)
class _Starting:
    """A role to start, what says it is ready, and its name in errors."""

    role: Role
    ready: Callable[[], bool]
    what: str


@contextmanager
def clawbus_workers(stack: Stack, count: int) -> Iterator[list[Role]]:
    """``count`` worker processes at the defaults a user gets (a threads pool), consuming every queue."""
    with stack.redis() as client, _running(*(_clawbus_worker(stack, client) for _ in range(count))) as roles:
        yield roles


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
    url = worker_url or stack.redis_url
    try:
        with _running(*(_bare_worker(stack, app, events, url) for _ in range(count))):
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
    with stack.redis() as client, _running(_clawbus_worker(stack, client, *options)) as (role,):
        yield role


def _clawbus_worker(stack: Stack, client: redis.Redis, *options: str) -> _Starting:
    """A clawbus worker, ready once its heartbeat is in Redis (read through ``client``)."""
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
    return _Starting(role, lambda: bool(client.keys(heartbeat)), f"worker {name}")


def _bare_worker(stack: Stack, app: Celery, events: bool, url: str) -> _Starting:
    """A bare Celery worker, ready once it answers a ping. Without mingle, as clawbus's workers: it only
    syncs with other workers at start (a second's wait for their replies), which none has to give here."""
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
        "--without-mingle",
    ]
    env = {
        **os.environ,
        bare_celery.URL_ENV: url,
        bare_celery.EVENTS_ENV: "1" if events else "0",
        "PYTHONUNBUFFERED": "1",
    }
    role = Role(argv, env, stack.root / f"{name}.log")
    node = f"{name}@{socket.gethostname()}"

    def answers() -> bool:
        # Addressed to this worker and over at its first reply, rather than collecting replies for the
        # whole timeout.
        replies: list[dict[str, Any]] = app.control.ping([node], timeout=1, limit=1) or []
        return any(node in reply for reply in replies)

    return _Starting(role, answers, f"bare worker {name}")


# The process serving each API started here (by its URL): what api_pid answers.
_API_PIDS: dict[str, int] = {}


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

    with _running(_Starting(role, ready, "API")) as (running,):
        _API_PIDS[url] = pid_of(running)
        try:
            yield url
        finally:
            del _API_PIDS[url]


@contextmanager
def _running(*starting: _Starting) -> Iterator[list[Role]]:
    """Start every role at once, wait (with one deadline) until each is ready, and stop them all together
    however the block ends."""
    roles = [each.role for each in starting]
    try:
        for each in starting:
            each.role.start()
        deadline = time.monotonic() + READY_TIMEOUT_S
        for each in starting:
            _ready(each, deadline)
        yield roles
    finally:
        _stop_all(roles)


def _ready(starting: _Starting, deadline: float) -> None:
    role = starting.role
    timeout = max(deadline - time.monotonic(), 0.0)
    wait_for(lambda: starting.ready() or role.exited(), timeout, what=f"{starting.what} ready")
    if role.exited():
        raise RuntimeError(f"{starting.what} exited early:\n{role.output()[-3000:]}")


def _stop_all(roles: list[Role]) -> None:
    """Each role's own stop (a warm shutdown, then a kill after the grace), all begun at once, each on a
    thread of its own; waited for unless stops go on in the background."""
    if not roles:
        return
    pool = ThreadPoolExecutor(len(roles), thread_name_prefix="bench-stop")
    stops = [pool.submit(role.stop, STOP_GRACE_S) for role in roles]
    pool.shutdown(wait=False)
    if _background_stops is not None:
        _background_stops.extend(stops)
        return
    for stop in stops:
        stop.result()


def pid_of(role: Role) -> int:
    if role.process is None:
        raise RuntimeError(f"{role.name} is not running")
    return role.process.pid


def api_pid(url: str) -> int:
    """The process serving ``url`` (started by ``api``): ``clawbus api`` with one worker serves in its own
    process. Known from its start, not from its command line, which a forked role does not have."""
    try:
        return _API_PIDS[url]
    except KeyError:
        raise RuntimeError(f"no API started here serves {url}") from None
