"""clawbus as the differential suite runs it: a private redis-server, a worker, beat and the API
(tests/support/processes.py), configured to mirror the gateway's configuration (tests/support/
openclaw_gateway.py): one agent ``main`` on the model ``fake/fake-model`` of an OpenAI-compatible provider,
and the release's defaults where clawbus's differ (every session visible, agent-to-agent on)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from shared.config import Config
from tests.differential.calls import TOKEN
from tests.support.processes import (
    RedisServer,
    Role,
    role_env,
    start_api,
    start_beat,
    start_worker,
    write_config,
)


def gateway_mirror(model_base_url: str, workspace: Path) -> dict[str, Any]:
    """The gateway's settings in clawbus's terms, every one of them, whether clawbus takes it or not."""
    return {
        "agents": {
            "defaults": {"workspace": str(workspace)},
            "list": [{"id": "main", "default": True, "model": "fake/fake-model"}],
        },
        "models": {
            "providers": {
                "fake": {
                    "type": "openai",
                    "baseUrl": model_base_url,
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
            }
        },
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
        "gateway": {
            "tools": {"allow": ["sessions_send", "sessions_spawn"]},
            "http": {"endpoints": {"chatCompletions": {"enabled": True}, "responses": {"enabled": True}}},
        },
    }


def mirrored_config(model_base_url: str, workspace: Path) -> tuple[dict[str, Any], list[str]]:
    """The mirror less the settings clawbus's configuration rejects as unknown, and their paths: the
    suite runs against what clawbus accepts today and the report says what it could not mirror."""
    config = gateway_mirror(model_base_url, workspace)
    left_out: list[str] = []
    while True:
        try:
            Config.model_validate(config)
            return config, left_out
        except ValidationError as exc:
            unknown = [error["loc"] for error in exc.errors() if error["type"] == "extra_forbidden"]
            if not unknown or len(unknown) != len(exc.errors()):
                raise
            config = copy.deepcopy(config)
            for loc in unknown:
                left_out.append(_drop(config, loc))


def _drop(config: dict[str, Any], loc: tuple[int | str, ...]) -> str:
    """Removes the setting at ``loc``, a pydantic error location (which may hold a union member's tag
    that is no key of the data), and returns its path."""
    node: Any = config
    path: list[str] = []
    for part in loc[:-1]:
        if isinstance(node, list) and isinstance(part, int):
            node = node[part]
            path.append(f"[{part}]")
        elif isinstance(node, dict) and part in node:
            node = node[part]
            path.append(f".{part}")
    del node[loc[-1]]
    return (("".join(path) + f".{loc[-1]}").lstrip(".")).replace(".[", "[")


@dataclass
class ClawbusSide:
    url: str
    home: Path
    unmirrored: list[str]


@contextmanager
def clawbus_stack(root: Path, model_base_url: str) -> Iterator[ClawbusSide]:
    """A redis-server, a worker, beat and the API, stopped whatever happens."""
    # The gateway's workspace is <state>/workspace: so is this side's, under its own state root.
    config, unmirrored = mirrored_config(model_base_url, root / "workspace")
    server = RedisServer(root / "redis").start()
    roles: list[Role] = []
    try:
        home = root / "home"
        env = role_env(server.url, write_config(root, config), home, TOKEN)
        roles.append(start_worker(env, root))
        roles.append(start_beat(env, root, home))
        api, url = start_api(env, root)
        roles.append(api)
        yield ClawbusSide(url, home, unmirrored)
    finally:
        for role in reversed(roles):
            role.stop()
        server.stop()
