"""api/cli/client_commands.py: how `clawbus sessions list` says when a session was last updated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from api.cli.client_commands import age

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
