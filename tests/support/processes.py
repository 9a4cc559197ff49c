"""Real processes for integration tests: a private redis-server, Celery workers, the API.

Every process is started on a free loopback port (never 6379), waited for with a deadline, and stopped
(SIGTERM, then SIGKILL) by whoever started it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import redis

from api.embedded import free_port, redis_answers, redis_server_binary

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]


def wait_for(condition: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy; fail the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


def stop_process(process: subprocess.Popen[Any], grace: float = 15.0, sig: int = signal.SIGTERM) -> None:
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
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        argv = [
            redis_server_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(self.directory),
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            "always",
        ]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: redis_answers(self.url), 10, what="redis-server to answer")
        return self

    def stop(self) -> None:
        if self.process:
            stop_process(self.process)
            self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, decode_responses=True)


def write_config(directory: Path, config: dict[str, Any]) -> Path:
    path = directory / f"clawbus-{uuid.uuid4().hex[:8]}.json5"
    path.write_text(json.dumps(config, indent=2))
    return path


@dataclass
class Role:
    """A ``clawbus <role>`` child process with the test's environment."""

    argv: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> Role:
        handle = self.log.open("ab")
        self.process = subprocess.Popen(
            self.argv, env=self.env, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
        handle.close()
        return self

    def stop(self, grace: float = 15.0) -> None:
        if self.process:
            stop_process(self.process, grace)
            self.process = None

    def kill(self) -> None:
        """SIGKILL the whole process group: a worker's pool children die with it, as in a crash."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def role_env(redis_url: str, config_path: Path, home: Path, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWBUS_")}
    env.update(
        CLAWBUS_REDIS_URL=redis_url,
        CLAWBUS_CONFIG=str(config_path),
        CLAWBUS_HOME=str(home),
        CLAWBUS_API_TOKENS=token,
        PYTHONUNBUFFERED="1",
    )
    return env


def start_worker(
    env: dict[str, str],
    log_dir: Path,
    *,
    concurrency: int = 2,
    pool: str = "prefork",
    queues: str | None = None,
) -> Role:
    name = f"test-{uuid.uuid4().hex[:8]}"
    argv = [
        sys.executable,
        "-m",
        "api.cli",
        "worker",
        f"--concurrency={concurrency}",
        f"--pool={pool}",
        f"--name={name}@%h",
        "--loglevel=INFO",
    ]
    if queues:
        argv += [f"--queue={q}" for q in queues.split(",")]
    role = Role(argv, env, log_dir / f"{name}.log").start()
    client = redis.Redis.from_url(env["CLAWBUS_REDIS_URL"], decode_responses=True)
    with _stopped_on_failure(role):
        try:
            wait_for(lambda: client.keys(f"*worker:{name}@*") or _died(role), 60, what=f"worker {name} ready")
        finally:
            client.close()
        _raise_if_dead(role)
    return role


def start_api(env: dict[str, str], log_dir: Path, port: int | None = None) -> tuple[Role, str]:
    port = port or free_port()
    argv = [sys.executable, "-m", "api.cli", "api", f"--port={port}"]
    role = Role(argv, env, log_dir / f"api-{port}.log").start()
    url = f"http://127.0.0.1:{port}"
    with _stopped_on_failure(role):
        wait_for(lambda: _ready(url) or _died(role), 30, what="API /readyz")
        _raise_if_dead(role)
    return role, url


def start_beat(env: dict[str, str], log_dir: Path, home: Path) -> Role:
    argv = [sys.executable, "-m", "api.cli", "beat", f"--schedule={home / 'beat-schedule'}"]
    return Role(argv, env, log_dir / "beat.log").start()


@contextmanager
def _stopped_on_failure(role: Role) -> Iterator[None]:
    """A role that never became ready is stopped here: its caller never gets it to stop."""
    try:
        yield
    except BaseException:
        role.kill()
        raise


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _died(role: Role) -> bool:
    return role.process is not None and role.process.poll() is not None


def _raise_if_dead(role: Role) -> None:
    if _died(role):
        raise RuntimeError(f"{role.argv[3]} exited early:\n{role.output()[-3000:]}")
