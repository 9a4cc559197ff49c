"""Fixtures shared by all tests: configs, and the in-process world (``workers.testing.world``: fakeredis
running the store's Lua, a fixed clock, the inline dispatcher) and its parts, one world per test."""

from __future__ import annotations

import compileall
import gc
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis import Redis

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.workers.testing import InlineDispatcher, World
from clawbus.workers.testing import world as world_of
from tests.support.processes import REPO, fork_roles

# Tests of everything but visibility see every session; the visibility tests set their own.
BASE_CONFIG: dict[str, Any] = {
    "agents": {"list": [{"id": "main", "default": True}, {"id": "research"}]},
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
}

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
    repeatable = False

    def step(self, _request: object) -> None:
        raise RuntimeError("model down")


@pytest.fixture(autouse=True, scope="session")
def _home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Whatever a test writes under CLAWBUS_HOME (cold transcripts by default) stays in its own folder."""
    os.environ.setdefault("CLAWBUS_HOME", str(tmp_path_factory.mktemp("clawbus-home")))


@pytest.fixture
def thawed_collector() -> Iterator[None]:
    """No garbage collection but the test's own, and nothing left frozen after it (shared/base/gc_pauses.py)."""
    gc.disable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()


@pytest.fixture
def config() -> Config:
    return make_config()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def inline(config: Config, clock: FixedClock) -> World:
    """The test's world on the ``config`` and ``clock`` fixtures (a module may override either); the
    fixtures below are its parts."""
    return world_of(config, clock=clock)


@pytest.fixture
def redis_client(inline: World) -> Redis:
    return inline.store.redis


@pytest.fixture
def store(inline: World) -> Store:
    return inline.store


@pytest.fixture
def dispatcher(inline: World) -> InlineDispatcher:
    return inline.dispatcher


@pytest.fixture
def ctx(inline: World) -> ToolContext:
    """A tool called as the main session."""
    return inline.context("main")


@pytest.fixture
def world(clock: FixedClock) -> WorldFactory:
    """For tests that need their own configuration: ``world(overrides, ...)`` is another ``World``, its
    config the overrides merged onto BASE_CONFIG in order, on a fakeredis of its own and the test's
    ``clock``."""

    def make(*overrides: dict[str, Any] | None) -> World:
        return world_of(make_config(*overrides), clock=clock)

    return make


def pytest_configure(config: pytest.Config) -> None:
    """The project's bytecode, written once before any test starts a process: with
    PYTHONDONTWRITEBYTECODE set (as on some CI machines), every worker, beat and API process the suite
    starts (hundreds) would otherwise compile the project's modules again, 0.2 s of CPU each."""
    if not hasattr(config, "workerinput"):  # the xdist controller, or a run without xdist
        for package in ("shared", "api", "workers"):
            compileall.compile_dir(REPO / package, quiet=1)
    # Started as a background job (SIGINT ignored: `cmd &` in a script, `trap '' INT`, some CI runners),
    # every process the suite starts would inherit the ignored SIGINT, and a test that stops one as Ctrl-C
    # does would wait in vain. Python's own handler here is reset to the default in every child it execs.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Workers, APIs and beats forked from one interpreter that has imported them (tests/support/
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
