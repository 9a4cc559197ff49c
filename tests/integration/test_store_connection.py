"""shared/store/connection.py against a real redis-server: a store client serves as many threads at once as
a worker runs (redis-py 7 caps a pool at 100 connections unless told otherwise)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from clawbus.shared.config import RedisConfig
from clawbus.shared.store.connection import connect
from tests.support.processes import RedisServer

# More than redis-py's default cap, as a worker at the defaults has: 100 pool threads, each holding a
# connection while a command of its runs, beside its lease keeper and cancel listener.
AT_ONCE = 150


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    redis_server = RedisServer(tmp_path / "redis").start()
    try:
        yield redis_server
    finally:
        redis_server.stop()


def test_a_store_client_serves_more_threads_at_once_than_redis_pys_default_cap(server: RedisServer) -> None:
    client = connect(RedisConfig(url=server.url))
    start = threading.Barrier(AT_ONCE, timeout=30)
    failures: list[BaseException] = []

    def block_on_redis(i: int) -> None:
        start.wait()
        try:
            # A blocking read holds its connection for the whole second: all of them are out at once.
            client.blpop([f"nothing-{i}"], timeout=1)
        except BaseException as exc:  # what a thread met is the test's finding
            failures.append(exc)

    threads = [threading.Thread(target=block_on_redis, args=(i,)) for i in range(AT_ONCE)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    created = len(client.connection_pool._available_connections)
    client.close()
    assert failures == []
    assert created >= AT_ONCE
