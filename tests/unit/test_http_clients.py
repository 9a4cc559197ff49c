"""shared/adapters/http_clients.py: one kept HTTP client per process and name, never a parent's in a forked
child."""

from __future__ import annotations

import os

from shared.adapters.http_clients import process_client


def test_the_same_name_gets_the_same_client_and_another_name_its_own() -> None:
    assert process_client("test-a") is process_client("test-a")
    assert process_client("test-a") is not process_client("test-b")


def test_a_forked_child_makes_its_own_client() -> None:
    parent = id(process_client("test-fork"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether it got its parent's client, then leave at once
        os.write(write, b"same" if id(process_client("test-fork")) == parent else b"own")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as answer:
        assert answer.read() == b"own"
