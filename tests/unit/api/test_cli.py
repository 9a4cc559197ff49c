"""api/cli/: the commands by concern, and the spinner a wait shows."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import NoReturn

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from clawbus.api.cli import app, client_commands, roles

COMMANDS = {"up", "api", "worker", "beat", "flower", "send", "mcp", "check-config", "status", "probe"}
GROUPS = {"sessions", "runs", "flows", "token", "config", "subagents", "budgets"}


def test_every_command_is_on_the_one_app() -> None:
    names = {command.name or command.callback.__name__ for command in app.registered_commands}  # type: ignore[union-attr]
    assert names == COMMANDS
    assert {group.name for group in app.registered_groups} == GROUPS


def _shown(monkeypatch: object, **kwargs: object) -> str:
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=100)
    monkeypatch.setattr(client_commands, "console", terminal)  # type: ignore[attr-defined]
    with client_commands.waiting("agent:main:main to reply", **kwargs):  # type: ignore[arg-type]
        terminal.print("working")
    return out.getvalue()


def test_a_wait_shows_what_it_waits_for_and_for_how_long(monkeypatch: object) -> None:
    shown = _shown(monkeypatch, timeout=30)
    assert "waiting up to 30s for agent:main:main to reply" in shown


def test_json_output_and_no_wait_show_no_spinner(monkeypatch: object) -> None:
    assert "waiting" not in _shown(monkeypatch, timeout=30, quiet=True)
    assert "waiting" not in _shown(monkeypatch, timeout=0)


@pytest.fixture(autouse=True)
def _defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No configuration file: every setting at its default. (What a role sets in the environment for the
    process it becomes is put back: set first, so that deleting it is recorded.)"""
    monkeypatch.delenv("CLAWBUS_CONFIG", raising=False)
    for name in ("CLAWBUS_LOG_LEVEL", "CLAWBUS_WORKER_POOL", "CLAWBUS_WORKER_CONCURRENCY"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def _role_argv(monkeypatch: pytest.MonkeyPatch, *args: str) -> list[str]:
    """What ``clawbus <args>`` would exec (it does not)."""
    became: list[list[str]] = []

    def exec_role(argv: list[str]) -> NoReturn:
        became.append(argv)
        raise typer.Exit(0)

    monkeypatch.setattr(roles, "exec_role", exec_role)
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return became[0]


@pytest.mark.parametrize("role", ["worker", "beat"])
def test_loglevel_sets_the_level_the_role_logs_at(monkeypatch: pytest.MonkeyPatch, role: str) -> None:
    argv = _role_argv(monkeypatch, role, "--loglevel", "warning")
    assert argv[argv.index("--loglevel") + 1] == "WARNING"
    assert os.environ["CLAWBUS_LOG_LEVEL"] == "warning"  # what the Celery process it becomes reads


@pytest.mark.parametrize("role", ["worker", "beat"])
def test_without_loglevel_the_role_logs_at_the_configured_level(
    monkeypatch: pytest.MonkeyPatch, role: str
) -> None:
    argv = _role_argv(monkeypatch, role)
    assert argv[argv.index("--loglevel") + 1] == "INFO"
    assert "CLAWBUS_LOG_LEVEL" not in os.environ


def test_a_worker_starts_without_mingle_and_gossip(monkeypatch: pytest.MonkeyPatch) -> None:
    argv = _role_argv(monkeypatch, "worker")
    assert {"--without-mingle", "--without-gossip", "-E"} <= set(argv)


def test_the_api_serves_the_app_that_may_tune_its_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWBUS_API_TOKENS", "a-token")
    argv = _role_argv(monkeypatch, "api")
    assert argv[argv.index("--factory") + 1] == "clawbus.api.app:create_server_app"


def test_an_unknown_loglevel_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roles, "exec_role", lambda argv: None)
    result = CliRunner().invoke(app, ["worker", "--loglevel", "loud"])
    assert result.exit_code == 2
    assert "logging.level" in result.output


def test_config_validate_json_answers_as_the_releases_command(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text("{session: {dmScope: 'per-peer'}, agents: {entries: {main: {}}}}")
    result = CliRunner().invoke(app, ["config", "validate", "--json"], env={"CLAWBUS_CONFIG": str(path)})
    assert result.exit_code == 0
    answer = json.loads(result.stdout)
    assert (answer["valid"], answer["path"]) == (True, str(path))
    assert [warning["path"] for warning in answer["warnings"]] == ["session.dmScope"]


def test_config_validate_names_what_the_release_refuses_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text("{session: {bogus: 1}}")
    result = CliRunner().invoke(app, ["config", "validate", "--json"], env={"CLAWBUS_CONFIG": str(path)})
    assert result.exit_code == 1
    assert json.loads(result.stdout)["issues"] == [
        {"path": "session", "message": 'Unrecognized key: "bogus"'}
    ]
