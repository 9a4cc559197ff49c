"""docker-compose.yml: one service per role, each running a command the CLI really has."""

from __future__ import annotations

import os
import re
from pathlib import Path

import redis
import yaml

from clawbus.api.cli import app
from clawbus.api.processes import Child, free_port, redis_server_binary, wait_for
from clawbus.shared.config import load_config
from tests.support.processes import RedisServer

REPO = Path(__file__).resolve().parents[2]


def compose() -> dict[str, dict[str, object]]:
    services: dict[str, dict[str, object]] = yaml.safe_load((REPO / "docker-compose.yml").read_text())[
        "services"
    ]
    return services


ROLES = {"api", "worker", "beat", "flower"}
HA = {"redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"}


def test_every_role_has_a_service_and_the_ha_profile_adds_a_replica_and_three_sentinels() -> None:
    services = compose()
    assert set(services) == {"redis", *ROLES, *HA}
    assert {name for name, service in services.items() if service.get("profiles") == ["ha"]} == HA


def test_every_clawbus_service_runs_a_cli_role() -> None:
    roles = {
        command.name or (command.callback.__name__ if command.callback else "")
        for command in app.registered_commands
    }
    for name, service in compose().items():
        if name not in ROLES:
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


def test_the_replica_follows_redis_and_every_role_can_be_pointed_at_the_sentinels() -> None:
    services = compose()
    replica = services["redis-replica"]["command"]
    assert isinstance(replica, list)
    assert replica[1:4] == ["--replicaof", "redis", "6379"]
    environment = services["api"]["environment"]
    assert isinstance(environment, dict)
    assert environment["CLAWBUS_REDIS_SENTINELS"] == "${CLAWBUS_REDIS_SENTINELS:-}"  # empty: one Redis
    assert environment["CLAWBUS_REDIS_SENTINEL_MASTER"] == "${CLAWBUS_REDIS_SENTINEL_MASTER:-clawbus}"


def _resolved(environment: dict[str, str], given: dict[str, str]) -> dict[str, str]:
    """``environment`` as compose hands it to a container when only ``given`` is set in the shell."""

    def value(match: re.Match[str]) -> str:
        name, operator, default = match.groups()
        if given.get(name):
            return given[name]
        assert operator == ":-", f"{name} must be set"
        return default

    return {key: re.sub(r"\$\{(\w+)(:-|:\?)([^}]*)\}", value, text) for key, text in environment.items()}


def test_every_role_loads_its_compose_environment_as_one_redis_or_under_the_sentinels() -> None:
    environment = compose()["worker"]["environment"]
    assert isinstance(environment, dict)
    shell = {"CLAWBUS_API_TOKENS": "operator-token"}
    one = _resolved(environment, shell)
    del one["CLAWBUS_CONFIG"]  # the mounted file is the example: defaults here
    redis_config = load_config(None, one).redis
    assert (redis_config.sentinel, redis_config.url) == (None, "redis://redis:6379/0")
    sentinels = "sentinel-1:26379,sentinel-2:26379,sentinel-3:26379"  # the command the file's header gives
    ha = _resolved(environment, {**shell, "CLAWBUS_REDIS_SENTINELS": sentinels})
    del ha["CLAWBUS_CONFIG"]
    sentinel = load_config(None, ha).redis.sentinel
    assert sentinel is not None
    assert (len(sentinel.hosts), sentinel.master) == (3, "clawbus")


def test_the_sentinel_command_starts_a_real_sentinel_watching_clawbus(tmp_path: Path) -> None:
    """The compose command, run here with loopback addresses for the service names: redis-server accepts
    the file it writes and watches the master it names."""
    master = RedisServer(tmp_path / "redis").start()
    port = free_port()
    command = compose()["sentinel-1"]["command"]
    assert isinstance(command, list)
    script = (
        command[2]
        .replace("'port 26379'", f"'port {port}' 'bind 127.0.0.1' 'dir {tmp_path}'")
        .replace("clawbus redis 6379", f"clawbus 127.0.0.1 {master.port}")
        .replace("/tmp/sentinel.conf", str(tmp_path / "sentinel.conf"))
        .replace("exec redis-server", f"exec {redis_server_binary()}")
    )
    sentinel = Child("sentinel", ["sh", "-c", script], dict(os.environ)).start(tmp_path / "sentinel.log")
    try:
        with redis.Redis(port=port, decode_responses=True) as client:
            addr = wait_for(lambda: _master_of(client), 10, what="the sentinel to name the master")
        assert addr == ["127.0.0.1", str(master.port)]
    finally:
        sentinel.kill()
        master.stop()


def _master_of(client: redis.Redis) -> list[str] | None:
    try:
        return list(client.execute_command("SENTINEL", "get-master-addr-by-name", "clawbus"))
    except (redis.RedisError, OSError):
        return None
