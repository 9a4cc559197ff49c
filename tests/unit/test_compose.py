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


def test_every_service_has_a_healthcheck_and_waits_for_what_it_needs() -> None:
    services = compose()
    for name, service in services.items():
        assert "healthcheck" in service, name
        if name != "redis":
            depends = service["depends_on"]
            assert isinstance(depends, dict)
            assert depends["redis"] == {"condition": "service_healthy"}, name
    beat_needs = services["beat"]["depends_on"]
    assert isinstance(beat_needs, dict)
    assert beat_needs["worker"] == {"condition": "service_healthy"}  # the reaper needs a worker to run


def test_liveness_checks_use_the_clis_probes() -> None:
    services = compose()
    for role in ("worker", "beat"):
        check = services[role]["healthcheck"]
        assert isinstance(check, dict)
        assert check["test"] == ["CMD", "clawbus", "probe", role]


def test_a_worker_gets_more_time_to_stop_than_a_run_takes_and_beat_stays_single() -> None:
    services = compose()
    assert services["worker"]["stop_grace_period"] == "10m"
    assert services["beat"]["deploy"] == {"replicas": 1}


def test_flower_takes_its_basic_auth_from_the_environment() -> None:
    environment = compose()["flower"]["environment"]
    assert isinstance(environment, dict)
    assert environment["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")


def test_the_image_runs_as_a_non_root_user_from_a_slim_base() -> None:
    dockerfile = (REPO / "Dockerfile").read_text().splitlines()
    assert dockerfile[1].startswith("FROM python:3.11-slim")
    assert "USER clawbus" in dockerfile


def test_workers_run_a_threads_pool_sized_for_model_calls_with_the_shared_environment() -> None:
    services = compose()
    worker = services["worker"]["environment"]
    assert (worker["CLAWBUS_WORKER_POOL"], worker["CLAWBUS_WORKER_CONCURRENCY"]) == ("threads", "100")
    assert {k: v for k, v in worker.items() if not k.startswith("CLAWBUS_WORKER_")} == (
        services["api"]["environment"]
    )
