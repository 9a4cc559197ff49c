"""clients/python: the thin client is a distribution of its own, versioned with the server, that loads
nothing of the server side, and whose models read what the server's models write."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import clawbus_client
import pytest
from clawbus_client import models as client_models
from pydantic import BaseModel

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
