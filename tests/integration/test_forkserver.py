"""tests/support/forkserver.py: a forked child is the command as ``python -m`` runs it (its environment,
output, exit code, signals), and none outlives the test process that asked for it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.forkserver import ForkServer
from tests.support.processes import REPO, role_env_base

# Commands of the standard library: one that prints a variable of its environment and exits, one that runs
# until it is signalled.
USER_BASE = [sys.executable, "-m", "site", "--user-base"]
SERVER = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"]


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    forks = ForkServer(REPO, role_env_base())
    yield forks
    forks.close()


def env(**extra: str) -> dict[str, str]:
    return {**role_env_base(), **extra}


def test_a_child_has_its_own_environment_and_the_exit_code_of_the_same_command_run_directly(
    server: ForkServer,
) -> None:
    forked = server.spawn(USER_BASE, env(PYTHONUSERBASE="/elsewhere"), REPO, None)
    direct = subprocess.run(USER_BASE, env=env(PYTHONUSERBASE="/elsewhere"), capture_output=True, check=False)

    assert forked.stdout is not None
    assert forked.stdout.read() == direct.stdout == b"/elsewhere\n"
    assert forked.wait(30) == direct.returncode
    forked.stdout.close()


def test_a_childs_errors_go_to_the_file_it_was_given_and_its_input_is_empty(
    server: ForkServer, tmp_path: Path
) -> None:
    log = tmp_path / "child.log"
    with log.open("ab") as sink:  # json.tool reads its input, finds no JSON there and says so on stderr
        forked = server.spawn([sys.executable, "-m", "json.tool"], env(), REPO, sink.fileno())

    assert forked.wait(30) == 1
    assert "Expecting value" in log.read_text()


def test_a_running_child_times_out_a_wait_and_reports_the_signal_that_ended_it(server: ForkServer) -> None:
    forked = server.spawn(SERVER, env(), REPO, None)

    with pytest.raises(subprocess.TimeoutExpired):
        forked.wait(0.2)
    assert forked.poll() is None
    os.killpg(forked.pid, signal.SIGTERM)  # a group of its own, as start_new_session gives

    assert forked.wait(30) == -signal.SIGTERM
    assert forked.poll() == -signal.SIGTERM
    assert forked.stdout is not None
    forked.stdout.close()


def test_children_are_killed_when_their_test_process_goes() -> None:
    forks = ForkServer(REPO, role_env_base())
    forked = forks.spawn(SERVER, env(), REPO, None)
    assert forked.poll() is None

    forks.close()

    assert forked.wait(30) == -signal.SIGKILL
    assert not running(forked.pid)
    assert forked.stdout is not None
    forked.stdout.close()


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has ended, whoever reaps it
