"""clients/python: the thin client is a distribution of its own, versioned with the server, that loads
nothing of the server side, and whose models read what the server's models write: they are the server's
models' bases, where the fields are declared once, read leniently."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import clawbus_client
import pytest
from clawbus_client import models as client_models
from pydantic import BaseModel, ValidationError

from clawbus.shared.wire import attachments as attachments_wire
from clawbus.shared.wire import fleet as fleet_wire
from clawbus.shared.wire import history_schema, list_schema, send_schema, spawn_schema, subagents_schema
from clawbus.shared.wire import models as server_models

REPO = Path(__file__).resolve().parents[3]
SERVER_SIDE = ("shared", "api", "workers", "json5", "celery", "fastapi", "redis", "mcp", "a2a")


def version_in(pyproject: Path) -> str:
    version: str = tomllib.loads(pyproject.read_text())["project"]["version"]
    return version


def test_importing_the_client_loads_nothing_of_the_server_side() -> None:
    probe = (
        "import sys, clawbus_client, clawbus_client.models; "
        f"print(','.join(m for m in {SERVER_SIDE!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""


def test_the_client_is_versioned_with_the_server() -> None:
    client_version = version_in(REPO / "clients/python/pyproject.toml")
    assert client_version == version_in(REPO / "pyproject.toml") == clawbus_client.__version__
    server = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"clawbus-client=={client_version}" in server


def test_the_client_depends_on_httpx_httpx_sse_and_pydantic_only() -> None:
    needs = tomllib.loads((REPO / "clients/python/pyproject.toml").read_text())["project"]["dependencies"]
    assert sorted(need.split(">")[0].split("=")[0] for need in needs) == ["httpx", "httpx-sse", "pydantic"]


SERVER_MODULES = (
    server_models,
    attachments_wire,
    fleet_wire,
    history_schema,
    list_schema,
    send_schema,
    spawn_schema,
    subagents_schema,
)


def server_model(name: str) -> type[BaseModel]:
    found = [getattr(module, name) for module in SERVER_MODULES if hasattr(module, name)]
    assert found, f"no server model {name}"
    model: type[BaseModel] = found[0]
    return model


def wire_names(model: type[BaseModel]) -> set[str]:
    return set(model.model_json_schema(mode="serialization", by_alias=True)["properties"])


CLIENT_MODELS = [
    value
    for value in vars(client_models).values()
    if isinstance(value, type)
    and issubclass(value, client_models.Model)
    and not value.__name__.startswith("_")  # a base of the client's own
    and value is not client_models.Model
]


@pytest.mark.parametrize("model", CLIENT_MODELS, ids=lambda model: model.__name__)
def test_every_field_the_client_reads_is_one_the_server_writes(model: type[BaseModel]) -> None:
    assert wire_names(model) <= wire_names(server_model(model.__name__))


@pytest.mark.parametrize("model", CLIENT_MODELS, ids=lambda model: model.__name__)
def test_every_field_the_server_writes_has_a_name_in_the_client(model: type[BaseModel]) -> None:
    """Not only kept as an extra: a field added to the server's model is added here too."""
    assert wire_names(server_model(model.__name__)) <= wire_names(model)


@pytest.mark.parametrize("model", CLIENT_MODELS, ids=lambda model: model.__name__)
def test_the_server_model_is_the_client_model_narrowed(model: type[BaseModel]) -> None:
    """Its fields are declared once, in the client; the server's model keeps their order and its own
    configuration (an unknown field ignored, not kept)."""
    server = server_model(model.__name__)
    assert issubclass(server, model)
    assert list(server.model_fields)[: len(model.model_fields)] == list(model.model_fields)
    assert server.model_config["extra"] == "ignore"
    assert model.model_config["extra"] == "allow"


def test_the_run_status_is_one_enum() -> None:
    assert server_models.RunStatus is client_models.RunStatus


def test_the_client_reads_a_newer_servers_answer() -> None:
    """A value of a closed set it does not know is a string, a field it does not know is kept; the server's
    own model refuses the one and ignores the other."""
    written = {"runId": "r1", "status": "deferred", "sessionKey": "main", "queuePosition": 3}
    read = client_models.SendResult.model_validate(written)
    assert (read.status, read.model_extra) == ("deferred", {"queuePosition": 3})
    assert read.wire() == written
    with pytest.raises(ValidationError, match="status"):
        send_schema.SendResult.model_validate(written)
    kept = send_schema.SendResult.model_validate({**written, "status": "accepted"})
    assert kept.model_extra in (None, {})
    assert "queuePosition" not in kept.wire()


def test_a_run_reads_back_as_the_server_wrote_it() -> None:
    trace = "0af7651916cd43dd8448eb211c80319c"
    run = server_models.Run(
        run_id="r1",
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        status=server_models.RunStatus.OK,
        seq=1,
        created_at=1,
        trace_parent=f"00-{trace}-b7ad6b7169203331-01",
        sampling=server_models.Sampling(max_tokens=64),
    )
    read = client_models.Run.model_validate(run.wire())
    assert (read.trace_id, run.trace_id) == (trace, trace)
    assert read.status is client_models.RunStatus.OK
    assert read.sampling == client_models.Sampling(max_tokens=64)
    assert read.wire() == run.wire()
