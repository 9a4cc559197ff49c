"""Fault tests run clawbus's roles on test hosts (tests/support/hosts.py): network namespaces on a private
subnet, cut off from each other and healed as a test says."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import hosts, takeovers
from tests.support.processes import Role


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "faults" in item.path.parts:
            item.add_marker(pytest.mark.integration)


@pytest.fixture
def network() -> Iterator[hosts.Network]:
    """A private network to put hosts on; skipped where this machine cannot make one."""
    reason = hosts.unavailable()
    if reason:
        pytest.skip(f"fault tests need test hosts: {reason}")
    with hosts.network() as made:
        yield made


@pytest.fixture
def roles(network: hosts.Network) -> Iterator[list[Role]]:
    """The test's processes, wherever they run: killed at its end, before its hosts are deleted."""
    started: list[Role] = []
    yield started
    for role in reversed(started):
        role.kill()


@pytest.fixture
def world(network: hosts.Network, roles: list[Role], tmp_path: Path) -> takeovers.World:
    """Redis, two workers, beat and the API, for runs that worker-a holds when its fault comes."""
    return takeovers.start(network, roles, tmp_path)
