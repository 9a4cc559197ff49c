"""api/cli/: the commands by concern, and the spinner a wait shows."""

from __future__ import annotations

import io

from rich.console import Console

from api.cli import app, client_commands

COMMANDS = {"up", "api", "worker", "beat", "flower", "send", "mcp", "check-config", "status", "probe"}
GROUPS = {"sessions", "runs", "flows", "token"}


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
