"""The thin client installed alone: clients/python into a fresh virtualenv (pip fetches httpx, httpx-sse and
pydantic, nothing of the server), then a send that waits, a run's stream and a cancel, sync and async,
against the live stack from a script run by that virtualenv's Python."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.processes import REPO
from tests.support.stack import TOKEN, Stack

SERVER_PACKAGES = ("celery", "kombu", "redis", "fastapi", "starlette", "flower", "mcp", "a2a-sdk", "clawbus")

SCRIPT = """
import asyncio, json, sys
from clawbus_client import AsyncClient, Client

url, token, brisk, stalled = sys.argv[1:5]
out = {}
with Client(url, token) as bus:
    sent = bus.sessions_send(brisk, "hello", timeout_seconds=30)
    out["reply"] = sent.reply
    streamed = bus.sessions_send(brisk, "stream me", wait=False)
    out["events"] = [event["type"] for event in bus.stream_run(streamed.run_id)]
    started = bus.sessions_send(stalled, "stop me", wait=False)
    out["cancelled"] = bus.cancel_run(started.run_id).status

async def main():
    async with AsyncClient(url, token) as bus:
        sent = await bus.sessions_send(brisk, "async hello", timeout_seconds=30)
        out["async_reply"] = sent.reply
        started = await bus.sessions_send(stalled, "stop me too", wait=False)
        out["async_cancelled"] = (await bus.cancel_run(started.run_id)).status

asyncio.run(main())
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def thin_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("thin")
    # Built from a copy: pip leaves build/ and egg-info beside the sources it builds.
    source = shutil.copytree(REPO / "clients/python", root / "source", ignore=shutil.ignore_patterns("build"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    return python


def test_the_thin_client_installs_without_any_server_dependency(thin_python: Path) -> None:
    listed = subprocess.run(
        [str(thin_python), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert "clawbus-client" in installed
    assert {"httpx", "httpx-sse", "pydantic"} <= installed
    assert installed.isdisjoint(SERVER_PACKAGES)
    for server_module in ("clawbus.shared", "clawbus.api", "clawbus.workers", "shared", "api", "workers"):
        probe = subprocess.run(
            [str(thin_python), "-c", f"import {server_module}"], capture_output=True, cwd=thin_python.parent
        )
        assert probe.returncode != 0, f"{server_module} importable from the thin client's virtualenv"


def test_the_thin_client_alone_sends_streams_and_cancels_against_a_live_stack(
    stack: Stack, thin_python: Path
) -> None:
    brisk = f"agent:brisk:cron:thin-{uuid.uuid4().hex[:8]}"
    stalled = f"agent:stalled:cron:thin-{uuid.uuid4().hex[:8]}"
    with stack.client() as client:
        client.open_session(brisk)
        client.open_session(stalled)
    ran = subprocess.run(
        [str(thin_python), "-c", SCRIPT, stack.url, TOKEN, brisk, stalled],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=thin_python.parent,  # not the repository: nothing of it on the path
    )
    assert ran.returncode == 0, ran.stderr
    out = json.loads(ran.stdout)
    assert out["reply"] == "echo: hello"
    assert out["events"][-1] == "ended"
    assert out["events"][:2] == ["queued", "started"]
    assert out["cancelled"] == "aborted"
    assert out["async_reply"] == "echo: async hello"
    assert out["async_cancelled"] == "aborted"
