"""`clawbus up` on a machine where its API or Flower port is already taken: one line, nothing started."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import REPO, free_port

pytestmark = pytest.mark.e2e


def processes_started_for(home: Path) -> list[int]:
    """Processes whose environment names ``home`` as their CLAWBUS_HOME (every role `up` starts has it)."""
    marker = f"CLAWBUS_HOME={home}".encode()
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # gone meanwhile, or not ours
            continue
    return found


@pytest.mark.parametrize("taken", ["api", "flower"])
def test_up_with_a_taken_port_fails_in_one_line_naming_the_port_and_its_holder(
    taken: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWBUS_")}
    env.update(CLAWBUS_HOME=str(home), PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        ports = (
            {"api": port, "flower": free_port()} if taken == "api" else {"api": free_port(), "flower": port}
        )
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "clawbus.api.cli",
                "up",
                f"--api-port={ports['api']}",
                f"--flower-port={ports['flower']}",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    role, option = ("API", "--api-port") if taken == "api" else ("Flower", "--flower-port")
    command = Path("/proc/self/comm").read_text().strip()
    assert result.returncode == 1
    assert (result.stdout + result.stderr).splitlines() == [
        f"clawbus: {role} port {port} is taken by pid {os.getpid()} ({command}); pick another with {option}"
    ]
    # No banner, no token, nothing started: not even the token or the private Redis's directory exists.
    assert not home.exists()
    assert processes_started_for(home) == []
