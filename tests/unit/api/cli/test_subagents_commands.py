"""api/client.py's sub-agent methods and api/cli/orchestration.py (`clawbus subagents ...`, `clawbus status
--session`), against the in-process API over an orchestration tree (tests/unit/api/orchestra.py)."""

from __future__ import annotations

import json
import re

import pytest
from clawbus_client import APIError, Client
from clawbus_client.models import SubagentRow
from fastapi.testclient import TestClient
from typer.testing import CliRunner, Result

from clawbus.api.cli import app, orchestration
from clawbus.shared.config import Config
from clawbus.workers.testing import World
from tests.support.api_app import client_through
from tests.support.api_orchestra import MAIN, orchestra_config, yielded_boss


@pytest.fixture
def api_config() -> Config:
    return orchestra_config()


@pytest.fixture
def boss(http: TestClient, api_world: World) -> str:
    return yielded_boss(http, api_world)


@pytest.fixture
def client(http: TestClient) -> Client:
    return client_through(http)


@pytest.fixture
def clawbus(http: TestClient, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The commands call the in-process API, whatever --url and --token say."""
    monkeypatch.setattr(orchestration, "client_for", lambda _url, _token: client_through(http))
    return CliRunner()


def run(runner: CliRunner, *args: str, code: int = 0) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


# -- the Python client ------------------------------------------------------------------------------------


def test_the_client_lists_a_tree_and_reads_its_status_cards(client: Client, boss: str) -> None:
    [top] = client.subagents("main").subagents
    assert (top.key, top.status, top.waiting_for) == (boss, "waiting", 3)
    tree = client.subagents("main", recursive=True)
    assert [row.depth for row in tree.subagents] == [1, 2, 2, 2]
    card = client.session_status(boss)
    assert (card.state, card.children_pending, card.role) == ("waiting for 3 children", 3, "orchestrator")
    assert client.subagent_info("main", "boss").subagent.key == boss


def test_the_client_steers_and_kills_by_key_and_label(client: Client, boss: str) -> None:
    leaf = client.subagents(boss).subagents[0].key
    steered = client.steer_subagent("main", leaf, "hurry up")
    assert (steered.target, steered.delivered) == (leaf, "new_run")
    killed = client.kill_subagent("main", "boss")
    assert killed.killed[0] == boss
    assert len(killed.killed) == 4


def test_the_client_raises_the_apis_404_for_an_unknown_target(client: Client, boss: str) -> None:
    with pytest.raises(APIError) as raised:
        client.kill_subagent("main", "nobody")
    assert (raised.value.status, raised.value.type, raised.value.field) == (404, "not_found", "target")


def test_a_label_with_spaces_reaches_the_api_whole(client: Client, boss: str) -> None:
    with pytest.raises(APIError) as raised:
        client.subagent_info("main", "the boss")
    assert "'the boss'" in raised.value.message


# -- the commands -----------------------------------------------------------------------------------------


def test_subagents_list_draws_the_tree_indented_by_depth(clawbus: CliRunner, boss: str) -> None:
    lines = run(clawbus, "subagents", "list", "--recursive").stdout.splitlines()
    assert re.fullmatch(
        rf"boss  {boss}  waiting for 3 children  orchestrator, depth 1  \d+s  (no tokens yet|\S+ tokens)",
        lines[0],
    ), lines[0]
    leaves = lines[1:4]
    assert [line.split("  ")[1] for line in leaves] == ["a", "b", "c"]  # one level in, oldest first
    assert all(re.search(r"  queued  leaf, depth 2  \d+s  ", line) for line in leaves), leaves
    assert lines[4] == "4 sub-agent(s)"


def test_subagents_list_of_another_session_and_as_json(clawbus: CliRunner, boss: str) -> None:
    rows = json.loads(run(clawbus, "subagents", "list", "--session", boss, "--json").stdout)
    assert (rows["count"], {r["spawnedBy"] for r in rows["subagents"]}) == (3, {boss})
    assert (
        run(clawbus, "subagents", "list", "--session", "cron:idle").stdout == "cron:idle has no sub-agents\n"
    )


def test_subagents_kill_names_every_session_it_stopped(clawbus: CliRunner, boss: str) -> None:
    lines = run(clawbus, "subagents", "kill", "boss").stdout.splitlines()
    assert lines[0] == "killed 4 session(s):"
    assert lines[1] == f"  {boss}"
    again = run(clawbus, "subagents", "kill", "all").stdout
    assert again == "nothing to stop: no sub-agent of main was still running\n"


def test_subagents_kill_of_an_unknown_target_fails_saying_why(clawbus: CliRunner, boss: str) -> None:
    failed = run(clawbus, "subagents", "kill", "nobody", code=1)
    assert "404 not_found: No sub-agent of this session matches 'nobody'" in failed.stderr


def test_subagents_steer_says_how_the_message_is_delivered(clawbus: CliRunner, boss: str) -> None:
    out = run(clawbus, "subagents", "steer", "boss", "wrap it up").stdout
    assert re.fullmatch(rf"{boss} was not running: the message starts run \S+\n", out), out


def test_subagents_info_shows_its_row_and_latest_run(clawbus: CliRunner, boss: str) -> None:
    lines = run(clawbus, "subagents", "info", "boss").stdout.splitlines()
    assert lines[0].startswith(f"boss  {boss}  waiting for 3 children  orchestrator, depth 1  ")
    assert lines[1] == f"spawned by {MAIN}, agent main"
    assert re.fullmatch(r"last run \S+  ok", lines[3]), lines


def test_status_with_a_session_prints_its_card(clawbus: CliRunner, boss: str) -> None:
    lines = run(clawbus, "status", "--session", boss).stdout.splitlines()
    assert lines[:6] == [
        f"session:  {boss} (agent main)",
        "state:    waiting for 3 children",
        "model:    script/orchestra",
        "runs:     0 running, 0 queued",
        "children: 3 still to report",
        "depth:    1, orchestrator",
    ]
    card = json.loads(run(clawbus, "status", "--session", "main", "--json").stdout)
    assert (card["sessionKey"], card["childrenPending"]) == (MAIN, 1)


def test_the_tree_puts_each_subagent_under_its_spawner_though_the_api_lists_level_by_level() -> None:
    def row(key: str, spawned_by: str, depth: int) -> SubagentRow:
        return SubagentRow(
            key=key,
            label=key,
            agent_id="main",
            depth=depth,
            role="leaf",
            spawned_by=spawned_by,
            status="running",
            runtime_ms=61_000,
            total_tokens=1500,
            pending_report=True,
        )

    level_by_level = [row("x", MAIN, 1), row("y", MAIN, 1), row("x1", "x", 2), row("y1", "y", 2)]
    level_by_level.append(row("x1a", "x1", 3))
    assert orchestration.tree_lines(level_by_level) == [
        "x  x  running  leaf, depth 1  1m1s  1.5k tokens",
        "  x1  x1  running  leaf, depth 2  1m1s  1.5k tokens",
        "    x1a  x1a  running  leaf, depth 3  1m1s  1.5k tokens",
        "y  y  running  leaf, depth 1  1m1s  1.5k tokens",
        "  y1  y1  running  leaf, depth 2  1m1s  1.5k tokens",
    ]
