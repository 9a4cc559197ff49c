"""The fuzz tests' stack: a real API process over its own redis-server, no worker (runs stay queued) and
waits capped at 1 s by the config. Each test file starts its own, so the two fuzz runs go side by side on
two xdist workers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import RedisServer, role_env, start_api, write_config
from tests.support.stack import STACK_CONFIG, TOKEN


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    server = RedisServer(root / "redis").start()
    config = {**STACK_CONFIG, "gateway": {"maxWaitSeconds": 1}}
    env = role_env(server.url, write_config(root, config), root / "home", TOKEN)
    api = None
    try:
        api, url = start_api(env, root)
        yield url
    finally:
        if api:
            api.stop()
        server.stop()
