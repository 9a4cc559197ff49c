"""``clawbus up``: the whole service on one machine, for development and small installations.

Redis (the configured one if it answers, else a private ``redis-server`` with AOF under ``CLAWBUS_HOME``),
one worker, beat, the API and Flower, each a ``clawbus <role>`` child process whose output is prefixed
with its role. Ctrl-C (or SIGTERM) stops them in order: API and Flower, beat, worker (warm shutdown: the
run in hand finishes), Redis last so its AOF is flushed. Nothing starts while the API's or Flower's port
is taken: one line says which, held by what, and the option that picks another.
"""

from __future__ import annotations

import errno
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from clawbus.api.processes import Child, free_port, redis_server_argv
from clawbus.shared.adapters.http_clients import process_client
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import Config
from clawbus.shared.store.connection import answers

STOP_GRACE_SECONDS = 30.0
READY_TIMEOUT_SECONDS = 60.0
_TCP_LISTEN = "0A"  # the state column of /proc/net/tcp


@dataclass
class Supervisor:
    """Starts role processes, prefixes their output with the role, stops them in reverse order."""

    env: dict[str, str]
    out: IO[str] = field(default_factory=lambda: sys.stdout)
    children: list[Child] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, role: str, argv: Sequence[str]) -> Child:
        child = Child(role, argv, self.env).start(lambda line: self.say(f"{role:>6} | {line}"))
        self.children.append(child)
        return child

    def say(self, line: str) -> None:
        with self._lock:
            self.out.write(line + "\n")
            self.out.flush()

    def exited(self) -> Child | None:
        return next((c for c in self.children if c.exited()), None)

    def stop_all(self) -> None:
        for child in reversed(self.children):
            started = time.monotonic()
            child.stop(STOP_GRACE_SECONDS)
            if time.monotonic() - started >= STOP_GRACE_SECONDS:
                self.say(f"{child.name:>6} | did not stop in {STOP_GRACE_SECONDS:g}s; killed")
        self.children.clear()


def ensure_token(home: Path) -> str:
    path = home / "token"
    if path.is_file() and path.read_text().strip():
        return path.read_text().strip()
    token = "cb_" + secrets.token_urlsafe(24)
    path.write_text(token + "\n")
    path.chmod(0o600)
    return token


@dataclass(frozen=True)
class UpOptions:
    home: Path
    api_port: int
    flower_port: int | None
    redis_url: str | None
    concurrency: int | None


def role_argv(role: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "clawbus.api.cli", role, *extra]


def up(config: Config, options: UpOptions, out: IO[str] = sys.stdout) -> int:
    """Run everything until interrupted; the exit code is non-zero if a role died on its own."""
    # Checked before anything starts: a server on the API's port would answer our readiness probe, and
    # the banner would hand out a URL and token that are not ours.
    problem = ports_problem(listen_ports(config, options))
    if problem:
        out.write(f"clawbus: {problem}\n")
        out.flush()
        return 1
    home = options.home
    home.mkdir(parents=True, exist_ok=True)
    token = ensure_token(home)
    env = dict(os.environ)
    supervisor = Supervisor(env, out)
    stopping = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        redis_url, private = _redis(options, home, supervisor)
        env.update(
            CLAWBUS_REDIS_URL=redis_url,
            CLAWBUS_API_TOKENS=",".join(filter(None, [env.get("CLAWBUS_API_TOKENS"), token])),
            CLAWBUS_HOME=str(home),
        )
        if options.flower_port:  # the console links to Flower where it listens
            env["CLAWBUS_FLOWER_PORT"] = str(options.flower_port)
        concurrency = [f"--concurrency={options.concurrency}"] if options.concurrency else []
        supervisor.start("worker", role_argv("worker", *concurrency))
        supervisor.start("beat", role_argv("beat", f"--schedule={home / 'celerybeat-schedule'}"))
        api_url = f"http://{config.gateway.bind}:{options.api_port}"
        supervisor.start("api", role_argv("api", f"--port={options.api_port}"))
        if options.flower_port:
            supervisor.start("flower", role_argv("flower", f"--port={options.flower_port}"))
        _wait_ready(api_url, token, supervisor, stopping)
        (home / "api-url").write_text(api_url + "\n")
        size = options.concurrency or config.worker.pool_size()
        worker = f"{config.worker.pool} pool, {size} runs at once"
        _banner(supervisor, api_url, options.flower_port, redis_url, private, token, home, worker)
        while not stopping.is_set():
            dead = supervisor.exited()
            if dead:
                code = dead.process.returncode if dead.process else "?"
                supervisor.say(f"clawbus: {dead.name} exited with code {code}; stopping")
                return 1
            stopping.wait(0.5)
        supervisor.say("clawbus: stopping (the worker finishes the run in hand)")
        return 0
    except _Aborted as exc:
        supervisor.say(f"clawbus: {exc}")
        return 1
    finally:
        supervisor.stop_all()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Aborted(ClawbusError):
    pass


@dataclass(frozen=True)
class ListenPort:
    """A port a role of ``clawbus up`` will listen on, and the option that picks another."""

    role: str
    host: str
    port: int
    option: str


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str


def listen_ports(config: Config, options: UpOptions) -> list[ListenPort]:
    ports = [ListenPort("API", config.gateway.bind, options.api_port, "--api-port")]
    if options.flower_port:  # Flower listens where `clawbus flower` binds by default
        ports.append(ListenPort("Flower", "127.0.0.1", options.flower_port, "--flower-port"))
    return ports


def bind_error(host: str, port: int) -> OSError | None:
    """Why a server could not listen on ``host:port`` now, None if it could."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # As uvicorn and Flower bind: a port whose last connections are still closing is free to them.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc
    return None


def port_holder(port: int, proc: Path = Path("/proc")) -> Holder | None:
    """The process listening on TCP ``port``, found from its socket's inode in ``/proc/net/tcp{,6}`` and
    the process whose open files include that socket; None where that cannot be known (no ``/proc``, or
    a process of another user)."""
    sockets = _listening_sockets(port, proc)
    if not sockets:
        return None
    for fds in proc.glob("[0-9]*/fd"):
        try:
            if any(os.readlink(fd) in sockets for fd in fds.iterdir()):
                pid = int(fds.parent.name)
                return Holder(pid, (proc / str(pid) / "comm").read_text().strip())
        except OSError:  # not ours to look into, or gone meanwhile
            continue
    return None


def _listening_sockets(port: int, proc: Path) -> set[str]:
    """``socket:[<inode>]``, as a process's fd links name them, of every socket listening on ``port``."""
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _TCP_LISTEN and int(local.rsplit(":", 1)[1], 16) == port and inode != "0":
                found.add(f"socket:[{inode}]")
    return found


def ports_problem(
    ports: Sequence[ListenPort], holder: Callable[[int], Holder | None] = port_holder
) -> str | None:
    """One line naming every port that cannot be listened on (and what holds a taken one), and the
    options that pick others; None when all are free."""
    bad = [(p, text) for i, p in enumerate(ports) if (text := _port_problem(p, ports[:i], holder))]
    if not bad:
        return None
    options = " and ".join(p.option for p, _ in bad)
    pick = "pick another with" if len(bad) == 1 else "pick others with"
    return "; ".join(text for _, text in bad) + f"; {pick} {options}"


def _port_problem(
    wanted: ListenPort, earlier: Sequence[ListenPort], holder: Callable[[int], Holder | None]
) -> str | None:
    twin = next((p for p in earlier if p.port == wanted.port), None)
    if twin:
        return f"{wanted.role} port {wanted.port} is the {twin.role} port too"
    error = bind_error(wanted.host, wanted.port)
    if error is None:
        return None
    if error.errno == errno.EADDRINUSE:
        return f"{wanted.role} port {wanted.port} is taken {_held_by(holder(wanted.port))}"
    return f"{wanted.role} cannot listen on {wanted.host}:{wanted.port} ({error.strerror or error})"


def _held_by(holder: Holder | None) -> str:
    if holder is None:
        return "(by a process not visible to this user)"
    return f"by pid {holder.pid} ({holder.command})"


def _redis(options: UpOptions, home: Path, supervisor: Supervisor) -> tuple[str, bool]:
    if options.redis_url:
        if answers(options.redis_url):
            return options.redis_url, False
        supervisor.say(f"clawbus: {options.redis_url} does not answer; starting a private Redis instead")
    port = free_port()
    data = home / "redis"
    data.mkdir(parents=True, exist_ok=True)
    supervisor.start("redis", redis_server_argv(port, data, appendfsync="everysec"))
    url = f"redis://127.0.0.1:{port}/0"
    for _ in _until(READY_TIMEOUT_SECONDS):
        if answers(url):
            return url, True
    raise _Aborted("the private Redis did not start")


def _wait_ready(api_url: str, token: str, supervisor: Supervisor, stopping: threading.Event) -> None:
    http = process_client("readiness")  # one TLS context for every poll, not one each (50 ms of CPU)
    for _ in _until(READY_TIMEOUT_SECONDS):
        if stopping.is_set():
            raise _Aborted("interrupted while starting")
        dead = supervisor.exited()
        if dead:
            code = dead.process.returncode if dead.process else "?"
            raise _Aborted(f"{dead.name} exited with code {code} while starting")
        try:
            ready = http.get(f"{api_url}/readyz", timeout=2).json()
        except (httpx.HTTPError, ValueError):
            continue
        if ready.get("ok") and ready.get("workers", 0) >= 1:
            return
    raise _Aborted(f"not ready after {READY_TIMEOUT_SECONDS:g}s")


def _until(seconds: float, step: float = 0.2, sleep: Callable[[float], None] = time.sleep) -> Iterator[None]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        yield
        sleep(step)


def _banner(
    supervisor: Supervisor,
    api_url: str,
    flower_port: int | None,
    redis_url: str,
    private: bool,
    token: str,
    home: Path,
    worker: str,
) -> None:
    where = f"private, AOF in {home / 'redis'}" if private else "configured"
    lines = [
        "",
        "clawbus is up",
        f"  API     {api_url}   (OpenAPI: {api_url}/docs)",
        f"  Console {api_url}/console   (sign in with the token below)",
        f"  Flower  http://127.0.0.1:{flower_port}" if flower_port else "  Flower  (off)",
        f"  Redis   {redis_url}   ({where})",
        f"  Worker  {worker}   (worker.pool, worker.concurrency)",
        f"  Token   {token}",
        "",
        "Try:  clawbus send main 'hello'      (the CLI finds the URL and token in CLAWBUS_HOME)",
        "Ctrl-C stops everything.",
        "",
    ]
    for line in lines:
        supervisor.say(line)
