"""A host whose clock is off: a process started with skewed_clock.c preloaded sees its wall clock moved by a
fixed number of seconds, as a host with a wrong clock would, while its monotonic clock (sleeps, lock and
wait timeouts) is left alone and time goes on at its normal rate. A network namespace cannot have a wall
clock of its own (Linux's time namespaces offset only the monotonic and boot clocks), so this is how a test
host gets one. (Debian's libfaketime moves the monotonic clock too, and with it Python's lock timeouts
never end.)

The library is compiled here, once, with the machine's C compiler."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(__file__).with_suffix(".c")
BUILT = Path(tempfile.gettempdir()) / "clawbus-skewed-clock"


def unavailable() -> str | None:
    """Why a process cannot be given a skewed clock here, or None once it can."""
    if shutil.which("gcc") is None:
        return "no C compiler (gcc) to build the wall-clock shim"
    try:
        library()
    except subprocess.CalledProcessError as exc:
        return f"the wall-clock shim did not compile: {exc.stderr}"
    return None


def library() -> Path:
    """The compiled shim, built on first use (named by its source's hash, so an edit builds it again)."""
    source = SOURCE.read_bytes()
    built = BUILT / f"skewed-clock-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if not built.exists():
        BUILT.mkdir(parents=True, exist_ok=True)
        partial = built.with_suffix(f".{os.getpid()}.tmp")
        command = ["gcc", "-shared", "-fPIC", "-O2", "-o", str(partial), str(SOURCE), "-ldl"]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)
        partial.replace(built)  # whole or not at all, whoever else builds it at the same time
    return built


def env(offset_s: int) -> dict[str, str]:
    """What a process's environment needs for its wall clock to be ``offset_s`` seconds ahead (negative:
    behind). A process forked from one without it keeps the true time: the role must be exec'd."""
    return {"LD_PRELOAD": str(library()), "SKEWED_CLOCK_OFFSET": str(offset_s)}


def offset_seen(offset_s: int) -> float:
    """How far off the wall clock of an interpreter started with ``env(offset_s)`` is, in seconds."""
    environment = {**os.environ, **env(offset_s)}
    before = time.time()
    shown = subprocess.run(
        [sys.executable, "-c", "import time; print(time.time())"],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return float(shown.stdout) - (before + time.time()) / 2
