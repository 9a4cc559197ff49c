"""The console in a real browser: Debian's chromium (installed here when absent; never a downloaded
browser) driven by Playwright, against a real stack (redis-server, a worker, the API) and the fake
OpenAI-compatible server for a model that streams slowly. A failed test leaves a screenshot in
``test-artifacts/browser/``."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clawbus_client import Client
from playwright.sync_api import Browser, Page, sync_playwright

from clawbus.shared.base.text import token_digest
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, paced
from tests.support.otlp_receiver import otlp_receiver
from tests.support.processes import REPO
from tests.support.stack import TOKEN, Fresh

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts" / "browser"
# About six seconds of talking, four characters every ~50 ms: long enough to watch and to cancel.
LONG = "A long answer that the model takes its time to write, word by word. " * 7
SLOW_SECONDS = 6.0
# What a test sends to keep a worker slot busy: answered over two minutes, so the run holds its slot until
# the test cancels it (whatever the machine's load, it is still running when the test looks at it).
HOLD = "hold this slot"
HOLD_SECONDS = 120.0
# Fewer slots than the tests' runs: some wait in the queue while others stream.
WORKER_SLOTS = 2
# A sub-agent leaf's answer (agent slow, model fake/slow): longer than any test takes, so the tree it is in
# is still under way when the console shows it, and only a kill ends it early (at the stream's next chunk).
LEAF_SECONDS = 120.0
# The session of agent lead a chain's message is sent into over the OpenAI-compatible endpoint.
LOOPED = "agent:lead:looped"
# The orchestrator (agent lead, the script runtime): fans out to two slow leaves in one step, then yields.
ORCHESTRA = {
    "type": "script",
    "models": ["lead"],
    "rules": [
        {
            "match": r"^\[Subagent Task\]: orchestrate",
            "tools": [
                {"name": "sessions_spawn", "args": {"task": "part 1", "agentId": "slow"}},
                {"name": "sessions_spawn", "args": {"task": "part 2", "agentId": "slow"}},
            ],
        },
        {"match": '"childSessionKey"', "tool": {"name": "sessions_yield", "args": {"message": "waiting"}}},
        # A message a chain brings at its hop limit: the send it asks for is refused by the chain guard.
        {
            "match": "^pass it on$",
            "tool": {
                "name": "sessions_send",
                "args": {"sessionKey": LOOPED, "message": "pass it on", "timeoutSeconds": 0},
            },
        },
    ],
}
# A token for the gpt agent only, next to the owner token the stack's environment gives.
SCOPED_TOKEN = "gpt-only-token"
SCOPED = {"name": "gpt-only", "sha256": token_digest(SCOPED_TOKEN), "agents": ["gpt"], "owner": False}
# Where the console links a trace (telemetry.tracing.traceUrl). Traces are on (a run has a trace id only then),
# sent to a local OTLP receiver that keeps them.
TRACE_URL = "https://traces.example/trace/{traceId}?from=clawbus"


@dataclass
class ConsoleStack:
    url: str
    client: Client
    model: FakeOpenAI


@pytest.fixture(scope="session")
def chromium() -> Path:
    if not CHROMIUM.exists():
        _install_chromium()
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing and could not be installed (apt-get install chromium chromium-driver)"
        )
    return CHROMIUM


def _install_chromium() -> None:
    """Debian's packages, with apt; on a machine whose package lists are empty (a fresh image) the lists
    are fetched first."""
    sudo = ["sudo", "-n"] if os.geteuid() != 0 and shutil.which("sudo") else []
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "-q", "chromium", "chromium-driver"]
    if subprocess.run(install, env=env, check=False, timeout=900).returncode != 0:
        subprocess.run([*sudo, "apt-get", "update", "-q"], env=env, check=False, timeout=900)
        subprocess.run(install, env=env, check=False, timeout=900)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    with fake_openai() as model, otlp_receiver() as traces:
        model.default = _answer
        fresh = Fresh(tmp_path_factory.mktemp("console"))
        try:
            fresh.start_redis(
                config={
                    # The example configuration's visibility: each session sees its own agent's sessions.
                    "tools": {"sessions": {"visibility": "agent"}},
                    "gateway": {
                        "auth": {"tokens": [SCOPED]},
                        "http": {"endpoints": {"chatCompletions": {"enabled": True}}},
                    },
                    "telemetry": {"tracing": {"endpoint": traces.url, "traceUrl": TRACE_URL}},
                    "agents": {
                        # Two levels: main's children may spawn, theirs are leaves.
                        "defaults": {"subagents": {"maxSpawnDepth": 2}},
                        "list": [
                            {"id": "main", "default": True, "subagents": {"allowAgents": ["gpt", "lead"]}},
                            {"id": "gpt", "model": "fake/gpt"},
                            # Spawned by main at depth 1, an orchestrator: it may spawn one level more.
                            {"id": "lead", "model": "orchestra/lead", "subagents": {"allowAgents": ["slow"]}},
                            {"id": "slow", "model": "fake/slow"},
                        ],
                    },
                    "models": {
                        "providers": {
                            "fake": {"type": "openai", "baseUrl": model.url, "models": ["gpt", "slow"]},
                            "orchestra": ORCHESTRA,
                        }
                    },
                }
            )
            fresh.worker(concurrency=WORKER_SLOTS)
            _, url = fresh.api()
            with Client(url, TOKEN) as client:
                yield ConsoleStack(url, client, model)
        finally:
            fresh.close()


def _answer(body: dict[str, Any]) -> Reply:
    """Leaves of the spawned tree talk for two minutes; a run asked to HOLD holds its slot until it is
    cancelled; every other answer takes SLOW_SECONDS."""
    if body["model"] == "slow":
        return paced(LONG * 3, LEAF_SECONDS)
    asked = body["messages"][-1]["content"]
    return paced(LONG, HOLD_SECONDS if asked == HOLD else SLOW_SECONDS)


@pytest.fixture(scope="module")
def browser(chromium: Path) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(chromium), headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    try:
        yield opened
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            opened.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
        context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, Any]:
    """Keeps each phase's report on the test, so the page fixture knows whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report
