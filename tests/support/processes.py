"""Real processes for integration tests and benchmarks: a private redis-server, Celery workers, the API.

Every process is started on a free loopback port (never 6379), waited for with a deadline, and stopped
(SIGTERM, then SIGKILL) by whoever started it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis

from clawbus.api.processes import Child, Process, free_port, redis_server_argv, wait_for
from clawbus.shared.store.connection import answers
from tests.support.forkserver import ForkServer

REPO = Path(__file__).resolve().parents[2]

__all__ = ["REPO", "RedisServer", "Role", "free_port", "role_env", "start_api", "start_beat", "start_worker"]
__all__ += ["fork_roles", "replica_of", "stop_process", "wait_for", "write_config"]

_fork_server: ForkServer | None = None
_forking = False
_fork_lock = threading.Lock()


def fork_roles(enabled: bool) -> None:
    """Roles start as children of a fork server (tests/support/forkserver.py) from now on, or (False)
    as interpreters of their own again, the fork server stopped. The tests fork them, and so does the quick
    bench (``python -m bench --quick``: its job is that every figure runs); a full-size figure starts its
    roles as interpreters of their own, as a deployment does."""
    global _fork_server, _forking
    with _fork_lock:
        _forking = enabled
        if not enabled and _fork_server is not None:
            _fork_server.close()
            _fork_server = None


def _forked(argv: list[str], env: dict[str, str], sink: Any) -> Process | None:
    global _fork_server
    with _fork_lock:
        if not _forking:
            return None
        if _fork_server is None:
            _fork_server = ForkServer(REPO, role_env_base())
        server = _fork_server
    return server.spawn(argv, env, REPO, None if sink == subprocess.PIPE else sink.fileno())


def stop_process(process: subprocess.Popen[Any], grace: float = 15.0, sig: int = signal.SIGTERM) -> None:
    """For a process a test started itself: ``sig``, then SIGKILL after ``grace`` s."""
    if process.poll() is None:
        process.send_signal(sig)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class RedisServer:
    directory: Path
    appendonly: bool = False
    port: int = field(default_factory=free_port)
    child: Child | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        argv = redis_server_argv(self.port, self.directory, appendfsync="always" if self.appendonly else None)
        self.child = Child("redis", argv, dict(os.environ)).start(self.directory / "redis.log")
        wait_for(lambda: answers(self.url), 10, what="redis-server to answer")
        return self

    def stop(self) -> None:
        if self.child:
            self.child.stop()
            self.child = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)


@contextmanager
def replica_of(server: RedisServer) -> Iterator[None]:
    """A replica of ``server``, in sync before the block and gone after it (``server`` forgets it)."""
    port = free_port()
    directory = server.directory / f"replica-{port}"
    directory.mkdir(parents=True)
    argv = [
        *redis_server_argv(port, directory, appendfsync=None),
        "--replicaof",
        "127.0.0.1",
        str(server.port),
    ]
    replica = Child("redis-replica", argv, dict(os.environ)).start(directory / "redis.log")
    master = server.client()
    try:
        # A replica still loading the master's snapshot is connected but acknowledges nothing yet.
        wait_for(lambda: _replica_state(master) == "online", 30, what="the replica in sync")
        yield
    finally:
        replica.stop()
        wait_for(lambda: _replica_state(master) is None, 30, what="the replica gone")
        master.close()


def _replica_state(master: redis.Redis) -> str | None:
    replica = master.info("replication").get("slave0")
    return replica.get("state") if isinstance(replica, dict) else None


def write_config(directory: Path, config: dict[str, Any]) -> Path:
    path = directory / f"clawbus-{uuid.uuid4().hex[:8]}.json5"
    path.write_text(json.dumps(config, indent=2))
    return path


class Role(Child):
    """A ``clawbus <role>`` child process with the test's environment, its output in ``log``."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        super().__init__(Path(log).stem, argv, env, cwd=REPO)
        self.log = log

    def start(self, output: Path | Callable[[str], None] | None = None) -> Role:
        super().start(output or self.log)
        return self

    def _spawn(self, sink: Any) -> Process:
        return _forked(list(self.argv), self.env, sink) or super()._spawn(sink)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def role_env(redis_url: str, config_path: Path, home: Path, token: str) -> dict[str, str]:
    env = role_env_base()
    env.update(
        CLAWBUS_REDIS_URL=redis_url,
        CLAWBUS_CONFIG=str(config_path),
        CLAWBUS_HOME=str(home),
        CLAWBUS_API_TOKENS=token,
    )
    return env


def role_env_base() -> dict[str, str]:
    """This process's environment without clawbus's settings, for an unbuffered interpreter running this
    checkout's code, whatever the working directory and wherever the package is installed from."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWBUS_")}
    env.update(
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    return env


# How a role's process is made from its argv, environment and log: here, or on a test host
# (tests/support/hosts.py).
Launch = Callable[[list[str], dict[str, str], Path], "Role"]


def start_worker(
    env: dict[str, str],
    log_dir: Path,
    *,
    concurrency: int = 8,
    pool: str | None = None,
    queues: str | None = None,
    name_prefix: str = "test",
    launch: Launch | None = None,
) -> Role:
    """A worker as users run it (the configured pool: threads by default), unless ``pool`` says otherwise."""
    name = f"{name_prefix}-{uuid.uuid4().hex[:8]}"
    argv = [
        sys.executable,
        "-m",
        "clawbus.api.cli",
        "worker",
        f"--concurrency={concurrency}",
        f"--name={name}@%h",
    ]
    if pool:
        argv.append(f"--pool={pool}")
    if queues:
        argv += [f"--queue={q}" for q in queues.split(",")]
    role = (launch or Role)(argv, env, log_dir / f"{name}.log").start()
    client = redis.Redis.from_url(env["CLAWBUS_REDIS_URL"], decode_responses=True)
    with stopped_on_failure(role):
        try:
            wait_for(
                lambda: client.keys(f"*worker:{name}@*") or role.exited(), 60, what=f"worker {name} ready"
            )
        finally:
            client.close()
        raise_if_dead(role)
    return role


def start_api(
    env: dict[str, str],
    log_dir: Path,
    port: int | None = None,
    *,
    address: str = "127.0.0.1",
    launch: Launch | None = None,
) -> tuple[Role, str]:
    """``clawbus api`` listening on ``address``, once it is ready: the role and its URL."""
    port = port or free_port()
    argv = [sys.executable, "-m", "clawbus.api.cli", "api", f"--port={port}"]
    if address != "127.0.0.1":
        argv.append(f"--host={address}")
    role = (launch or Role)(argv, env, log_dir / f"api-{port}.log").start()
    url = f"http://{address}:{port}"
    # One client for the whole wait: a client per poll builds a TLS context each time (about 50 ms of CPU).
    with stopped_on_failure(role), httpx.Client(timeout=1) as http:
        wait_for(lambda: _ready(http, url) or role.exited(), 30, what="API /readyz")
        raise_if_dead(role)
    return role, url


def start_beat(env: dict[str, str], log_dir: Path, home: Path) -> Role:
    argv = [sys.executable, "-m", "clawbus.api.cli", "beat", f"--schedule={home / 'beat-schedule'}"]
    return Role(argv, env, log_dir / "beat.log").start()


@contextmanager
def stopped_on_failure(role: Role) -> Iterator[None]:
    """A role that never became ready is stopped here: its caller never gets it to stop."""
    try:
        yield
    except BaseException:
        role.kill()
        raise


def _ready(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(f"{url}/readyz").status_code == 200
    except httpx.HTTPError:
        return False


def raise_if_dead(role: Role) -> None:
    if role.exited():
        raise RuntimeError(f"{role.argv[3]} exited early:\n{role.output()[-3000:]}")
