"""A user's openclaw.json, as OpenClaw 2026.9.6 validates it, starts a real fleet unchanged (issue: bring
your OpenClaw): a worker and the API started on the file as it is, the release's keyed agents, its
sub-agent depth and queue mode honoured, and what clawbus does not use said once by each role."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult, SpawnResult

from tests.support.processes import RedisServer, Role, role_env, start_api, start_worker, wait_for
from tests.support.stack import TOKEN

pytestmark = pytest.mark.integration

# The configuration of the issue, a few more of the release's keys beside it, and a model of the release's
# shape (an OpenAI-compatible provider) that clawbus cannot reach, as the fallback's primary.
OPENCLAW_JSON = """{
  agents: {
    defaults: {
      model: { primary: "offline/big", fallbacks: ["echo/echo"] },
      subagents: { maxSpawnDepth: 3 },
    },
    entries: { main: { default: true, subagents: { allowAgents: ["research"] } }, research: {} },
  },
  session: { dmScope: "per-channel-peer" },
  messages: { ackReaction: "👀", queue: { mode: "collect" } },
  models: {
    providers: {
      offline: { api: "anthropic-messages", baseUrl: "http://127.0.0.1:9", models: [{ id: "big", name: "Big" }] },
    },
  },
  gateway: { auth: { mode: "token", token: "${GATEWAY_TOKEN}" } },
}"""


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Client, list[Role]]]:
    config = tmp_path / "openclaw.json"
    config.write_text(OPENCLAW_JSON, encoding="utf-8")
    server = RedisServer(tmp_path / "redis").start()
    roles: list[Role] = []
    try:
        env = {
            **role_env(server.url, config, tmp_path / "home", TOKEN),
            "GATEWAY_TOKEN": "gateway-token-0123456789",
        }
        roles.append(start_worker(env, tmp_path, concurrency=2))
        api, url = start_api(env, tmp_path)
        roles.append(api)
        with Client(url, "gateway-token-0123456789") as client:
            yield client, roles
    finally:
        for role in reversed(roles):
            role.stop()
        server.stop()


def test_an_openclaw_json_starts_the_fleet_and_its_settings_hold(fleet: tuple[Client, list[Role]]) -> None:
    client, roles = fleet
    # The release's gateway token is an operator token; the primary no provider serves falls back to echo.
    sent = client.post_message("main", "hello", timeout_seconds=30)
    assert isinstance(sent, SendResult)
    assert sent.reply == "echo: hello"
    # maxSpawnDepth 3 from the file: main's child may spawn again (an orchestrator).
    spawned = SpawnResult.model_validate(
        client.invoke("sessions_spawn", {"task": "look", "agentId": "research"})
    )
    assert client.session_status(spawned.child_session_key).role == "orchestrator"
    for role in roles:
        wait_for(
            lambda role=role: "session.dmScope: not used by clawbus" in role.output(), 10, what="the report"
        )
        assert role.output().count("session.dmScope: not used by clawbus") == 1
        assert "messages.ackReaction: not used by clawbus" in role.output()
