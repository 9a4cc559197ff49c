"""`clawbus up` as a user runs it, then the README's quick-start calls over HTTP and the CLI, then Ctrl-C:
once with the example configuration the quick start copies, once with no configuration file at all (each
`clawbus up` started once, every test of its configuration run against it)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from clawbus.shared.tools.history_view import run_of, text_of
from tests.support.processes import REPO, free_port, stop_process, wait_for

pytestmark = pytest.mark.e2e

EXAMPLE, NO_CONFIG = "example config", "no config"
# clawbus's default visibility, `tree`: a session other than its agent's main one reaches itself and the
# sub-agents it spawned (the main session reaches every session of its agent).
TREE_REFUSES = (
    "Session {} visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
)


@dataclass
class Up:
    process: subprocess.Popen[bytes]
    log: Path
    home: Path
    api: str
    flower: str
    token: str
    redis_port: int
    config: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module", params=[EXAMPLE, NO_CONFIG])
def up(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    root = tmp_path_factory.mktemp("up")
    home, log = root / "home", root / "up.log"
    api_port, flower_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWBUS_")}
    env.update(CLAWBUS_HOME=str(home), PYTHONUNBUFFERED="1")
    if request.param == EXAMPLE:  # the README's first step: `cp clawbus.example.json5 clawbus.json5`
        shutil.copy(REPO / "clawbus.example.json5", root / "clawbus.json5")
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "clawbus.api.cli",
                "up",
                f"--api-port={api_port}",
                f"--flower-port={flower_port}",
            ],
            cwd=root,
            env={**env, "PYTHONPATH": str(REPO)},
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            lambda: "clawbus is up" in log.read_text(errors="replace") or process.poll() is not None,
            90,
            what="clawbus up",
        )
        text = log.read_text(errors="replace")
        assert process.poll() is None, text[-3000:]
        token = re.search(r"Token\s+(\S+)", text)
        redis_port = re.search(r"Redis\s+redis://127\.0\.0\.1:(\d+)/0", text)
        assert token, text[-3000:]
        assert redis_port, text[-3000:]
        yield Up(
            process,
            log,
            home,
            f"http://127.0.0.1:{api_port}",
            f"http://127.0.0.1:{flower_port}",
            token.group(1),
            int(redis_port.group(1)),
            request.param,
        )
    finally:
        stop_process(process, grace=60, sig=signal.SIGINT)


def test_up_uses_a_private_redis_and_writes_the_token_for_the_cli(up: Up) -> None:
    assert up.redis_port != 6379
    assert "private" in up.output()
    # The example sets worker.concurrency to 100; the default for the threads pool is 100 too.
    assert "Worker  threads pool, 100 runs at once" in up.output()
    assert (up.home / "token").read_text().strip() == up.token
    assert oct((up.home / "token").stat().st_mode & 0o777) == "0o600"


@dataclass
class QuickStart:
    """What each call of the README's quick start answered, made in its order."""

    inbound: dict[str, Any]
    opened: httpx.Response
    sent: dict[str, Any]
    listed: dict[str, Any]
    history: dict[str, Any]
    waited: httpx.Response
    cli_send: subprocess.CompletedProcess[str]
    cli_list: subprocess.CompletedProcess[str]


def quick_start(up: Up) -> QuickStart:
    with httpx.Client(base_url=up.api, headers=up.headers(), timeout=30) as http:
        assert http.get("/readyz").json()["workers"] >= 1
        inbound = http.post(
            "/v1/sessions/main/messages", json={"message": "hello", "channel": "webchat", "to": "me"}
        ).json()
        opened = http.put("/v1/sessions/discord:group:ops")  # a send opens no session
        sent = http.post(
            "/tools/invoke",
            json={
                "tool": "sessions_send",
                "args": {"sessionKey": "discord:group:ops", "message": "status?", "timeoutSeconds": 10},
            },
        ).json()
        listed = http.post(
            "/tools/invoke", json={"tool": "sessions_list", "args": {"messageLimit": 2}}
        ).json()
        history = http.post(
            "/tools/invoke", json={"tool": "sessions_history", "args": {"sessionKey": "discord:group:ops"}}
        ).json()
        waited = http.get(f"/v1/runs/{sent['result']['details']['runId']}/wait", params={"timeout": 5})
    return QuickStart(
        inbound,
        opened,
        sent,
        listed,
        history,
        waited,
        clawbus(up, "send", "main", "hello again"),
        clawbus(up, "sessions", "list"),
    )


def clawbus(up: Up, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as the README calls it: no URL or token given, it finds them in CLAWBUS_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWBUS_")}
    env["CLAWBUS_HOME"] = str(up.home)
    return subprocess.run(
        [sys.executable, "-m", "clawbus.api.cli", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("up", [EXAMPLE, NO_CONFIG], indirect=True)
def test_the_quick_start_calls_of_the_readme(up: Up) -> None:
    """The same answers either way: the example's `agent` visibility and the default `tree` both let main
    reach the other sessions of its agent."""
    done = quick_start(up)
    assert done.inbound["status"] == "ok"
    assert done.inbound["reply"] == "echo: hello"

    assert (done.opened.status_code, done.opened.json()["key"]) == (201, "agent:main:discord:group:ops")
    assert done.sent["ok"]
    assert done.sent["result"]["details"]["status"] == "ok"
    assert done.sent["result"]["details"]["reply"] == "echo: status?"

    rows = {row["key"]: row for row in done.listed["result"]["details"]["sessions"]}
    assert set(rows) == {"agent:main:main", "agent:main:discord:group:ops"}
    assert rows["agent:main:discord:group:ops"]["channel"] == "discord"

    # The send's turn opens the transcript; the exchange's later turns and its announce may follow.
    first, reply = done.history["result"]["details"]["messages"][:2]
    assert first["provenance"]["sourceSessionKey"] == "agent:main:main"
    assert (reply["role"], run_of(reply)) == ("assistant", run_of(first))

    run = done.waited.json()
    assert run["status"] == "ok"
    assert run["kind"] == "send"

    assert done.cli_send.returncode == 0, done.cli_send.stderr
    assert done.cli_send.stdout.strip() == "echo: hello again"
    assert done.cli_list.returncode == 0, done.cli_list.stderr
    assert done.cli_list.stdout.splitlines() == [
        "agent:main:main  main  webchat  updated just now",
        "agent:main:discord:group:ops  group  discord  updated just now",
        "2 session(s)",
    ]


@pytest.mark.parametrize("up", [EXAMPLE], indirect=True)
def test_the_orchestration_example_of_the_readme_reports_once_to_main(up: Up) -> None:
    """After the quick start (its listing expects main's sessions only): README, "Orchestration"."""
    with httpx.Client(base_url=up.api, headers=up.headers(), timeout=30) as http:
        spawned = http.post(
            "/tools/invoke",
            json={"tool": "sessions_spawn", "args": {"task": "orchestrate the summaries", "agentId": "lead"}},
        ).json()["result"]["details"]
        assert spawned["status"] == "accepted", spawned

        def reports() -> list[str]:
            history = http.post(
                "/tools/invoke", json={"tool": "sessions_history", "args": {"sessionKey": "main"}}
            ).json()["result"]["details"]
            return [
                text_of(m)
                for m in history["messages"]
                if m.get("provenance", {}).get("kind") == "subagent_announce"
            ]

        [report] = wait_for(reports, 60, what="the lead's report in main")
    assert report.startswith("Status: success\nResult: All three parts are summarized.")


@pytest.mark.parametrize("up", [EXAMPLE], indirect=True)
def test_the_a2a_example_of_the_readme_gets_main_s_answer(up: Up, tmp_path: Path) -> None:
    """README, "A2A": its Python block as written, run with this `clawbus up`'s URL and token."""
    section = (REPO / "README.md").read_text().split("### A2A", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert "http://127.0.0.1:8787" in code
    script = tmp_path / "a2a_example.py"
    script.write_text(code.replace("http://127.0.0.1:8787", up.api))
    (tmp_path / ".clawbus").symlink_to(up.home)  # ~/.clawbus/token, as `make up` leaves it
    ran = subprocess.run(
        [sys.executable, str(script)],
        env={**os.environ, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    context_id, answer = ran.stdout.strip().split(" ", 1)
    assert answer == "echo: hello"
    with httpx.Client(base_url=up.api, headers=up.headers(), timeout=30) as http:
        session = http.get(f"/v1/sessions/agent:main:a2a:{context_id}")
    assert session.status_code == 200, session.text


@pytest.mark.parametrize("up", [NO_CONFIG], indirect=True)
def test_without_a_config_file_a_session_other_than_main_reaches_only_its_tree(up: Up) -> None:
    with httpx.Client(base_url=up.api, headers=up.headers(), timeout=30) as http:
        assert http.put("/v1/sessions/discord:group:ops").status_code in (200, 201)
        refused = http.post(
            "/tools/invoke",
            json={
                "tool": "sessions_history",
                "sessionKey": "discord:group:ops",
                "args": {"sessionKey": "main"},
            },
        ).json()
    assert refused["result"]["details"] == {"status": "forbidden", "error": TREE_REFUSES.format("history")}


def test_the_api_refuses_what_a_tool_call_is_not(up: Up) -> None:
    with httpx.Client(base_url=up.api, timeout=30) as http:
        assert http.get("/tools/invoke", headers=up.headers()).status_code == 405
        assert http.post("/tools/invoke", json={"tool": "sessions_list"}).status_code == 401


def test_flower_watches_the_fleet(up: Up) -> None:
    wait_for(lambda: httpx.get(f"{up.flower}/healthcheck", timeout=2).status_code == 200, 30, what="flower")


def test_ctrl_c_stops_every_process(up: Up) -> None:
    api_port = int(up.api.rsplit(":", 1)[1])
    up.process.send_signal(signal.SIGINT)
    assert up.process.wait(60) == 0
    assert not port_open(api_port)
    assert not port_open(up.redis_port)
    assert "Redis is now ready to exit" in up.output() or "ready to exit" in up.output()
