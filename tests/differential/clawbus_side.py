"""clawbus as the differential suite runs it: a private redis-server, a worker, beat and the API
(tests/support/processes.py), given the gateway's own ``openclaw.json`` (tests/support/openclaw_gateway.py:
the same file, with this side's state folder and model server in it). Two configurations:

- ``defaults``: that file as it is, nothing added. Where clawbus's defaults differ from the release's
  (``tools.sessions.visibility`` ``tree``, agent-to-agent closed), the answers differ as documented.
- ``opened``: the same file with the two settings that open clawbus to the release's defaults
  (``visibility: "all"``, ``agentToAgent.enabled: true``), so every other call is compared as the release
  answers it.

What the file holds that clawbus does not use is what ``clawbus config validate`` reports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clawbus.shared.config import validate_config
from tests.differential.calls import TOKEN
from tests.support.openclaw_gateway import gateway_config
from tests.support.processes import (
    RedisServer,
    Role,
    role_env,
    start_api,
    start_beat,
    start_worker,
)

Configuration = Literal["defaults", "opened"]
CONFIGURATIONS: tuple[Configuration, ...] = ("opened", "defaults")

# The release's defaults that clawbus does not share, set on clawbus's side of ``opened`` only.
OPENED = {"tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}}}


def clawbus_config(configuration: Configuration, model_base_url: str, state: Path) -> dict[str, Any]:
    """The gateway's file, for a side whose state is ``state`` (its port is the API's own, given on the
    command line)."""
    config = gateway_config(port=1, token=TOKEN, state=state, model_base_url=model_base_url)
    if configuration == "opened":
        config["tools"] = OPENED["tools"]
    return config


def not_used(path: Path) -> list[str]:
    """The settings of the file at ``path`` that clawbus reports as not used, with why."""
    config, validation = validate_config(path, env={})
    if config is None:
        raise AssertionError(validation.refusal())
    return [f"{notice.path}: {notice.message}" for notice in validation.warnings]


@dataclass
class ClawbusSide:
    url: str
    home: Path
    not_used: list[str]


@contextmanager
def clawbus_stack(root: Path, model_base_url: str, configuration: Configuration) -> Iterator[ClawbusSide]:
    """A redis-server, a worker, beat and the API, stopped whatever happens."""
    root.mkdir(parents=True, exist_ok=True)
    config_file = root / "openclaw.json"
    config_file.write_text(json.dumps(clawbus_config(configuration, model_base_url, root), indent=2))
    unused = not_used(config_file)
    server = RedisServer(root / "redis").start()
    roles: list[Role] = []
    try:
        home = root / "home"
        env = role_env(server.url, config_file, home, TOKEN)
        roles.append(start_worker(env, root))
        roles.append(start_beat(env, root, home))
        api, url = start_api(env, root)
        roles.append(api)
        yield ClawbusSide(url, home, unused)
    finally:
        for role in reversed(roles):
            role.stop()
        server.stop()
