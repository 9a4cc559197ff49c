"""A fork server for the roles tests start: one interpreter that has imported what every ``clawbus worker``,
``api`` and ``beat`` imports (Celery, kombu, redis-py, pydantic, FastAPI, uvicorn, clawbus's own modules), and
forks a child per role instead of a new interpreter importing all of it again. A role's start costs about
1.8 s of CPU from a fresh interpreter; forked, a fraction of that. The suite starts hundreds of them.

Nothing imported here may have started a thread or read the configuration: a child is the role exactly as
``python -m api.cli <role>`` would run it, with its own environment, working directory and output, in a
process group of its own. The server serves the one test process that started it, and when that process goes
(its end of the control socket closes) it kills every child still running and exits.

The protocol, on a Unix datagram-like socket pair (``SOCK_SEQPACKET``): a request is a JSON object (argv, env,
cwd) with two file descriptors, the child's output and a stream socket on which the server writes the child's
pid, then its wait status when it has exited.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from clawbus.api.processes import die_with_parent, run_as_main

# What every role imports, in the order a worker's or an API's start imports it.
PRELOADED = (
    "clawbus.api.cli",
    "clawbus.api.app",
    "celery.bin.celery",
    "celery.apps.worker",
    "celery.apps.beat",
    "celery.worker.consumer.consumer",
    "celery.concurrency.thread",
    "kombu.transport.redis",
    "clawbus.workers.celery_app",
    "clawbus.workers.signals",
    "clawbus.workers.reaper",
    "clawbus.workers.tasks",
    "uvicorn.main",
    "uvicorn.server",
    "uvicorn.lifespan.on",
    "uvicorn.protocols.http.h11_impl",
    "uvicorn.protocols.websockets.auto",
    "uvicorn.loops.auto",
)
REQUEST_BYTES = 1 << 20


@dataclass
class Request:
    argv: list[str]
    env: dict[str, str]
    cwd: str


def serve(control: socket.socket) -> Request:
    """Fork a child per request until the client goes. Returns only in a child, with what it is to run."""
    children: dict[int, socket.socket] = {}
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the selector through the wakeup fd
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                message, fds, _, _ = socket.recv_fds(control, REQUEST_BYTES, 2)
                if not message:
                    _stop_all(children)
                    sys.exit(0)
                output, status_fd = fds
                status = socket.socket(fileno=status_fd)
                grouped_r, grouped_w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    for fd in (wake_r, wake_w, grouped_r):
                        os.close(fd)
                    control.close()
                    for other in children.values():
                        other.close()
                    status.close()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.setsid()
                    os.close(grouped_w)
                    return _become_child(json.loads(message), output)
                os.close(output)
                os.close(grouped_w)
                # The pid goes out once the child leads its group: a kill of the group never misses it.
                os.read(grouped_r, 1)
                os.close(grouped_r)
                status.sendall(f"{pid}\n".encode())
                children[pid] = status
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                _reap(children)


def _become_child(message: dict[str, Any], output: int) -> Request:
    die_with_parent()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(devnull)
    os.close(output)
    request = Request(**message)
    os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    random.seed()  # a forked child would otherwise draw the same numbers as its siblings
    return request


def _reap(children: dict[int, socket.socket], pid: int = -1, flags: int = os.WNOHANG) -> None:
    """Children that have ended (``pid``: that one, ``flags``: 0 to wait for it), each one's wait status
    sent on its channel."""
    while children:
        try:
            ended, status = os.waitpid(pid, flags)
        except ChildProcessError:
            return
        if ended == 0:
            return
        channel = children.pop(ended, None)
        if channel is not None:
            with contextlib.suppress(OSError):
                channel.sendall(f"{status}\n".encode())
            channel.close()


def _stop_all(children: dict[int, socket.socket]) -> None:
    """Every child still running killed with its group, and its end reported as any other."""
    for pid in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    for pid in list(children):
        _reap(children, pid, 0)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    for module in PRELOADED:
        importlib.import_module(module)
    if threading.active_count() != 1:
        sys.exit(f"fork server: importing the roles' modules started threads: {threading.enumerate()}")
    # As a preloading server does before it forks: a child's collections (a worker's first is at its start,
    # workers/signals.py) then leave what it inherited alone, rather than walk every page of it and copy it.
    gc.collect()
    gc.freeze()
    control.sendall(b"ready")
    run_as_main(serve(control).argv)  # the child's exit is the role's


class ForkedProcess:
    """A role the fork server started, with what the tests use of ``subprocess.Popen``."""

    def __init__(self, argv: list[str], pid: int, status: socket.socket, stdout: IO[bytes] | None) -> None:
        self.args = argv
        self.pid = pid
        self.stdout = stdout
        self.returncode: int | None = None
        self._status = status
        self._pending = b""

    def poll(self) -> int | None:
        return self._read_status(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._read_status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def _read_status(self, timeout: float | None) -> int | None:
        if self.returncode is not None:
            return self.returncode
        self._status.settimeout(timeout)
        with contextlib.suppress(TimeoutError, BlockingIOError):
            while not self._pending.endswith(b"\n"):
                chunk = self._status.recv(64)
                if not chunk:
                    raise RuntimeError(f"the fork server went before process {self.pid} ended")
                self._pending += chunk
            self.returncode = os.waitstatus_to_exitcode(int(self._pending))
            self._status.close()
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)


class ForkServer:
    """The client: one server per test process, started at its first role."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.forkserver", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        self._control = ours
        self._lock = threading.Lock()
        if self._control.recv(16) != b"ready":
            self._server.wait()
            raise RuntimeError(f"the fork server did not start (exit {self._server.returncode})")

    def spawn(self, argv: list[str], env: dict[str, str], cwd: Path, output: int | None) -> ForkedProcess:
        """``argv`` (``python -m ...``) in a forked child writing to the descriptor ``output``, or to a
        pipe the returned process's ``stdout`` reads."""
        read_end = None
        if output is None:
            read_end, output = os.pipe()
        ours, theirs = socket.socketpair()
        try:
            request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd)}).encode()
            with self._lock:
                socket.send_fds(self._control, [request], [output, theirs.fileno()])
        finally:
            theirs.close()
            if read_end is not None:
                os.close(output)
        pid = b""
        while not pid.endswith(b"\n"):
            chunk = ours.recv(32)
            if not chunk:
                raise RuntimeError("the fork server did not start the process")
            pid += chunk
        stdout = os.fdopen(read_end, "rb") if read_end is not None else None
        return ForkedProcess(argv, int(pid), ours, stdout)

    def close(self) -> None:
        self._control.close()
        self._server.wait(30)


if __name__ == "__main__":
    main()
