"""Fixtures shared by all tests: configs, a fakeredis-backed store, the inline dispatcher (workers.testing)."""

from __future__ import annotations

import compileall
import os
from collections.abc import Callable
from typing import Any

import fakeredis
import pytest

from shared.clock import FixedClock
from shared.config import Config
from shared.store import Store
from shared.tools.context import ToolContext
from workers.testing import InlineDispatcher
from workers.testing import world as world_of
from workers.testing.processes import REPO, fork_roles

# Tests of everything but visibility see every session; the visibility tests set their own.
BASE_CONFIG: dict[str, Any] = {
    "agents": {"list": [{"id": "main", "default": True}, {"id": "research"}]},
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
}

World = tuple[Config, Store, InlineDispatcher]
WorldFactory = Callable[..., World]


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``, section by section: a test that sets ``tools.subagents`` keeps
    ``tools.sessions``. Lists and values are replaced whole."""
    out = dict(base)
    for key, value in override.items():
        out[key] = (
            merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def make_config(*overrides: dict[str, Any] | None) -> Config:
    data = BASE_CONFIG
    for override in overrides:
        data = merged(data, override or {})
    return Config.model_validate(data)


class BrokenModel:
    """A runtime whose every step fails, as a model endpoint that is down."""

    history_window = 1

    def step(self, _request: object) -> None:
        raise RuntimeError("model down")


@pytest.fixture(autouse=True, scope="session")
def _home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Whatever a test writes under CLAWBUS_HOME (cold transcripts by default) stays in its own folder."""
    os.environ.setdefault("CLAWBUS_HOME", str(tmp_path_factory.mktemp("clawbus-home")))


@pytest.fixture
def config() -> Config:
    return make_config()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def redis_client() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(decode_responses=True)


@pytest.fixture
def store(redis_client: fakeredis.FakeRedis, config: Config, clock: FixedClock) -> Store:
    return Store(redis_client, config, clock)


@pytest.fixture
def dispatcher(redis_client: fakeredis.FakeRedis) -> InlineDispatcher:
    return InlineDispatcher(redis_client)


@pytest.fixture
def world(clock: FixedClock) -> WorldFactory:
    """For tests that need their own configuration: ``world(overrides, ...)`` gives a config (the overrides
    merged onto BASE_CONFIG in order), a store on a fakeredis of its own with the test's ``clock``, and an
    inline dispatcher."""

    def make(*overrides: dict[str, Any] | None) -> World:
        made = world_of(make_config(*overrides), clock=clock)
        return made.config, made.store, made.dispatcher

    return make


@pytest.fixture
def ctx(config: Config, store: Store, dispatcher: InlineDispatcher) -> ToolContext:
    return ToolContext.for_caller(config, store, dispatcher, "main")


def pytest_configure(config: pytest.Config) -> None:
    """The project's bytecode, written once before any test starts a process: with
    PYTHONDONTWRITEBYTECODE set (as on some CI machines), every worker, beat and API process the suite
    starts (hundreds) would otherwise compile the project's modules again, 0.2 s of CPU each."""
    if not hasattr(config, "workerinput"):  # the xdist controller, or a run without xdist
        for package in ("shared", "api", "workers"):
            compileall.compile_dir(REPO / package, quiet=1)
    # Workers, APIs and beats forked from one interpreter that has imported them (workers/testing/
    # forkserver.py), not each a new interpreter importing everything again: the suite starts hundreds.
    fork_roles(True)


def pytest_unconfigure(config: pytest.Config) -> None:
    fork_roles(False)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: a test file (or a group of them) per worker at a time (tests/support/xdist.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.support.xdist import scheduler

    return scheduler(config, log)


def pytest_report_header() -> str:
    from tests.fuzz.budget import describe

    return describe()
