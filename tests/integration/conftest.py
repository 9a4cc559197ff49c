"""The real distributed stack for integration tests (tests/support/stack.py): ``stack`` started once per
session and shared by tests that use distinct sessions, ``fresh`` built by a test piece by piece."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clawbus_client import Client

from tests.support.processes import RedisServer, role_env, start_api, start_beat, start_worker, write_config
from tests.support.stack import STACK_CONFIG, TOKEN, Fresh, Stack


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" in str(item.path):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("stack")
    server = RedisServer(root / "redis").start()
    config_path = write_config(root, STACK_CONFIG)
    env = role_env(server.url, config_path, root / "home", TOKEN)
    worker = beat = api = None
    try:
        worker = start_worker(env, root)
        beat = start_beat(env, root, root / "home")
        api, url = start_api(env, root)
        yield Stack(server, env, root, root / "home", worker, beat, api, url)
    finally:
        for role in (api, beat, worker):
            if role:
                role.stop()
        server.stop()


@pytest.fixture
def client(stack: Stack) -> Iterator[Client]:
    with stack.client() as c:
        yield c


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Fresh]:
    stack = Fresh(tmp_path)
    try:
        yield stack
    finally:
        stack.close()
