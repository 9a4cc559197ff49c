"""docker-compose.yml: one service per role, each running a command the CLI really has."""

from __future__ import annotations

from pathlib import Path

import yaml

from api.cli import app

REPO = Path(__file__).resolve().parents[2]


def compose() -> dict[str, dict[str, object]]:
    services: dict[str, dict[str, object]] = yaml.safe_load((REPO / "docker-compose.yml").read_text())[
        "services"
    ]
    return services


def test_every_role_has_a_service() -> None:
    assert set(compose()) == {"redis", "api", "worker", "beat", "flower"}


def test_every_clawbus_service_runs_a_cli_role() -> None:
    roles = {
        command.name or (command.callback.__name__ if command.callback else "")
        for command in app.registered_commands
    }
    for name, service in compose().items():
        if name == "redis":
            continue
        command = service["command"]
        assert isinstance(command, list)
        assert command[0] == "clawbus"
        assert command[1] == name
        assert command[1] in roles


def test_workers_have_no_fixed_name_or_port_so_they_scale() -> None:
    worker = compose()["worker"]
    assert "container_name" not in worker
    assert "ports" not in worker


def test_redis_keeps_an_append_only_file() -> None:
    command = compose()["redis"]["command"]
    assert isinstance(command, list)
    assert "--appendonly" in command
    assert "noeviction" in command
