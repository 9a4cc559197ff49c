"""The real stack the integration, browser and fuzz tests run on: a private redis-server, Celery workers,
beat and the API as processes of their own (tests/support/processes.py), with the configuration they share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from clawbus_client import Client

from tests.support.processes import (
    RedisServer,
    Role,
    role_env,
    start_api,
    start_beat,
    start_worker,
    write_config,
)

TOKEN = "test-token"
STACK_CONFIG: dict[str, Any] = {
    "session": {"agentToAgent": {"maxPingPongTurns": 2}},
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    "agents": {
        "list": [
            {"id": "main", "default": True, "subagents": {"allowAgents": ["slow", "scripted", "quiet"]}},
            {"id": "research"},
            {"id": "slow", "model": "slowecho/echo"},
            # Still running, however loaded the machine, when a test cancels it.
            {"id": "stalled", "model": "stalledecho/echo"},
            {"id": "brisk", "model": "briskecho/echo"},
            {"id": "scripted", "model": "script/script"},
            {"id": "quiet", "model": "quiet/script"},
        ]
    },
    "models": {
        "providers": {
            "slowecho": {"type": "echo", "delayMs": 3000},
            "stalledecho": {"type": "echo", "delayMs": 120_000},
            "briskecho": {"type": "echo", "delayMs": 200},
            # Drives the stop rules: REPLY_SKIP on the second reply turn, silence at the announce.
            "script": {
                "type": "script",
                "rules": [
                    {"match": "^echo: echo: stop-at-2", "reply": "REPLY_SKIP"},
                    # A model that fails on the second reply turn.
                    {"match": "^echo: echo: fail-turn", "error": "model down"},
                    {"match": r"^Agent-to-agent announce step\.$", "reply": "ANNOUNCE_SKIP"},
                    # A sub-agent that fails.
                    {"match": r"^\[Subagent Task\]: fail", "error": "disk full"},
                ],
            },
            "quiet": {
                "type": "script",
                # A sub-agent whose reply is the silent token: its requester hears nothing of it.
                "rules": [{"match": r"^\[Subagent Task\]", "reply": "ANNOUNCE_SKIP"}],
            },
        }
    },
    # Short leases so crash-recovery tests recover in seconds.
    "runs": {"leaseSeconds": 3, "dispatchGraceSeconds": 5, "reapIntervalSeconds": 1},
}


@dataclass
class Stack:
    redis_server: RedisServer
    env: dict[str, str]
    logs: Path
    home: Path
    worker: Role
    beat: Role
    api: Role
    url: str

    def client(self) -> Client:
        return Client(self.url, TOKEN)

    def redis(self) -> redis.Redis:
        return self.redis_server.client()


class Fresh:
    """A disposable stack a test builds piece by piece (for tests that kill or restart things)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.roles: list[Role] = []
        self.redis_server: RedisServer | None = None
        self.env: dict[str, str] = {}

    def start_redis(self, appendonly: bool = False, config: dict[str, Any] | None = None) -> RedisServer:
        """``config`` entries replace the stack's top-level sections."""
        self.redis_server = RedisServer(self.root / "redis", appendonly=appendonly).start()
        settings = {**STACK_CONFIG, **(config or {})}
        self.env = role_env(
            self.redis_server.url, write_config(self.root, settings), self.root / "home", TOKEN
        )
        return self.redis_server

    def worker(self, concurrency: int = 1, queues: str | None = None, pool: str | None = None) -> Role:
        return self._track(
            start_worker(self.env, self.root, concurrency=concurrency, queues=queues, pool=pool)
        )

    def api(self, port: int | None = None) -> tuple[Role, str]:
        role, url = start_api(self.env, self.root, port)
        return self._track(role), url

    def beat(self) -> Role:
        return self._track(start_beat(self.env, self.root, self.root / "home"))

    def _track(self, role: Role) -> Role:
        self.roles.append(role)
        return role

    def close(self) -> None:
        for role in reversed(self.roles):
            role.kill() if role.process and role.process.poll() is None else None
        if self.redis_server:
            self.redis_server.stop()
