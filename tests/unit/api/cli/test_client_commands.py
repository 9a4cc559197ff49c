"""api/cli/client_commands.py: how `clawbus sessions list` says when a session was last updated, and
`clawbus send --mode` steering or notifying a session."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from clawbus_client import Client
from fastapi.testclient import TestClient
from httpx import MockTransport
from typer.testing import CliRunner, Result

from clawbus.api.cli import app, client_commands
from clawbus.api.cli.client_commands import age
from clawbus.shared.store import Store
from tests.support.api_app import client_through
from tests.support.fake_api import FakeApi, steered

NOW = int(datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp() * 1000)
SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000


@pytest.mark.parametrize(
    ("ago_ms", "shown"),
    [
        (0, "just now"),
        (59 * SECOND, "just now"),
        (-5 * SECOND, "just now"),  # the server's clock a little ahead of the client's
        (MINUTE, "1 min ago"),
        (3 * MINUTE + 59 * SECOND, "3 min ago"),
        (59 * MINUTE, "59 min ago"),
        (HOUR, "1 h ago"),
        (2 * HOUR + 30 * MINUTE, "2 h ago"),
        (23 * HOUR + 59 * MINUTE, "23 h ago"),
        (DAY, "1 d ago"),
        (5 * DAY, "5 d ago"),
        (7 * DAY - SECOND, "6 d ago"),
        (7 * DAY, "2026-11-18 12:00"),
        (400 * DAY, "2025-10-21 12:00"),
    ],
)
def test_sessions_list_shows_how_long_ago_a_session_was_updated(ago_ms: int, shown: str) -> None:
    assert age(NOW - ago_ms, NOW, UTC) == shown


def test_past_a_week_the_date_is_in_the_given_local_time() -> None:
    paris = timezone(timedelta(hours=1))
    assert age(NOW - 8 * DAY, NOW, paris) == "2026-11-17 13:00"


# -- `clawbus send --mode` ----------------------------------------------------------------------------------


@pytest.fixture
def through_the_app(http: TestClient, monkeypatch: pytest.MonkeyPatch) -> Client:
    """The commands call the in-process API, whatever --url and --token say."""
    monkeypatch.setattr(client_commands, "client_for", lambda _url, _token: client_through(http))
    return client_through(http)


def send(*args: str, code: int = 0) -> Result:
    result = CliRunner().invoke(app, ["send", *args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result


def test_a_notification_is_queued_for_the_targets_next_turn_and_not_waited_for(
    through_the_app: Client, api_store: Store
) -> None:
    through_the_app.open_session("agent:main:ops")
    shown = send("agent:main:ops", "the deploy is done", "--mode", "notify").stdout
    [notification] = re.findall(r"notification (\S+) for agent:main:ops's next turn", shown)
    note = through_the_app.get_run(notification)
    assert (note.kind, note.status) == ("note", "queued")
    as_json = json.loads(send("agent:main:ops", "and verified", "--mode", "notify", "--json").stdout)
    assert (as_json["status"], as_json["runStarted"], as_json["durability"]) == ("queued", False, "durable")


def test_a_steer_nothing_takes_in_is_refused(through_the_app: Client) -> None:
    through_the_app.open_session("agent:main:ops")
    refused = send("agent:main:ops", "also this", "--mode", "steer", code=1)
    assert "Target has no active run that accepts steering" in refused.stderr + refused.stdout


def test_an_accepted_steer_is_answered_at_once_and_not_waited_for(
    api: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.answers = [steered]
    monkeypatch.setattr(
        client_commands,
        "client_for",
        lambda _url, _token: Client("http://api", "t", transport=MockTransport(api)),
    )
    shown = send("x", "also this", "--mode", "steer", "--timeout", "60").stdout
    assert "steered: run run-1 into agent:main:x's running turn" in shown
    assert len(api.seen) == 1  # no wait for the steer run: the run it steered into answers it
    assert json.loads(api.seen[0].content)["args"]["mode"] == "steer"


def test_an_unknown_mode_is_refused_before_anything_is_sent() -> None:
    refused = CliRunner().invoke(app, ["send", "main", "hi", "--mode", "resume"])
    assert refused.exit_code == 2


@pytest.fixture
def api() -> FakeApi:
    return FakeApi()
