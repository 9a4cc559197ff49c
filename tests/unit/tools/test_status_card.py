"""shared/tools/status_card.py: session_status's card laid out as the release's, and the release's ways of
writing times, durations, token counts and money."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from clawbus.shared.tools.status_card import (
    CardFacts,
    clock_lines,
    compact_duration,
    render,
    short_tokens,
    time_ago,
    token_count,
    usd,
)

# Friday, November 27th, 2026, 8:25 UTC: the moment of the release's captures.
CAPTURED = int(datetime(2026, 11, 27, 8, 25, 41, tzinfo=UTC).timestamp() * 1000)


def facts(**changes: object) -> CardFacts:
    base: dict[str, object] = {
        "version": "0.1.0",
        "now_ms": CAPTURED,
        "session_key": "main",
        "model_ref": "fake/fake-model",
        "config_model_ref": "fake/fake-model",
        "pinned": False,
        "context_window": 128_000,
        "thinking": "off",
        "queue_mode": "steer",
        "queue_depth": 0,
        "execution": "direct",
        "uptime": "process 17s · system 25m 17s",
        "updated_at": CAPTURED,
    }
    return CardFacts(**{**base, **changes})  # type: ignore[arg-type]


def test_the_clock_lines_read_as_the_releases_in_utc() -> None:
    assert clock_lines(CAPTURED) == (
        "Current time: Friday, November 27th, 2026 - 8:25 AM (UTC)\nReference UTC: 2026-11-27 08:25 UTC"
    )


@pytest.mark.parametrize(
    ("moment", "shown"),
    [
        (datetime(2026, 1, 1, 0, 5, tzinfo=UTC), "Thursday, January 1st, 2026 - 12:05 AM"),
        (datetime(2026, 1, 2, 12, 0, tzinfo=UTC), "Friday, January 2nd, 2026 - 12:00 PM"),
        (datetime(2026, 1, 3, 23, 59, tzinfo=UTC), "Saturday, January 3rd, 2026 - 11:59 PM"),
        (datetime(2026, 1, 11, 13, 7, tzinfo=UTC), "Sunday, January 11th, 2026 - 1:07 PM"),
        (datetime(2026, 1, 12, 9, 0, tzinfo=UTC), "Monday, January 12th, 2026 - 9:00 AM"),
        (datetime(2026, 1, 13, 9, 0, tzinfo=UTC), "Tuesday, January 13th, 2026 - 9:00 AM"),
        (datetime(2026, 1, 22, 9, 0, tzinfo=UTC), "Thursday, January 22nd, 2026 - 9:00 AM"),
    ],
)
def test_the_clock_has_ordinal_days_and_a_12_hour_time(moment: datetime, shown: str) -> None:
    assert clock_lines(int(moment.timestamp() * 1000)).startswith(f"Current time: {shown} (UTC)\n")


@pytest.mark.parametrize(
    ("ms", "compact", "spaced"),
    [
        (416, "416ms", "416ms"),
        (5_000, "5s", "5s"),
        (5_499, "5s", "5s"),
        (999.6, "1s", "1s"),
        (63_000, "1m3s", "1m 3s"),
        (120_000, "2m", "2m"),
        (3_601_000, "1h1s", "1h 1s"),
        (90_061_000, "1d1h", "1d 1h"),
    ],
)
def test_durations_are_the_two_largest_units(ms: float, compact: str, spaced: str) -> None:
    assert (compact_duration(ms), compact_duration(ms, spaced=True)) == (compact, spaced)


@pytest.mark.parametrize("ms", [0, -5, None, float("nan")])
def test_no_positive_duration_is_none(ms: float | None) -> None:
    assert compact_duration(ms) is None


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (0, "just now"),
        (29_000, "just now"),
        (90_000, "2m ago"),
        (3 * 3_600_000, "3h ago"),
        (50 * 3_600_000, "2d ago"),
    ],
)
def test_ages_read_as_the_releases(ms: int, shown: str) -> None:
    assert time_ago(ms) == shown


@pytest.mark.parametrize(
    ("count", "card", "listed"),
    [
        (15, "15", "15"),
        (999, "999", "999"),
        (1_000, "1.0k", "1k"),
        (1_250, "1.3k", "1.3k"),  # a tie rounds up, as toFixed does
        (12_345, "12k", "12k"),
        (128_000, "128k", "128k"),
        (999_999, "1.0m", "1m"),
        (2_500_000, "2.5m", "2.5m"),
    ],
)
def test_token_counts_are_compact(count: int, card: str, listed: str) -> None:
    assert (token_count(count), short_tokens(count)) == (card, listed)


def test_no_tokens_is_zero_on_the_card_and_nothing_in_the_list() -> None:
    assert (token_count(None), short_tokens(None), short_tokens(0)) == ("0", None, None)


@pytest.mark.parametrize(
    ("value", "shown"), [(0, "$0.0000"), (0.00125, "$0.0013"), (0.01, "$0.01"), (1.5, "$1.50")]
)
def test_money_has_cents_from_a_cent_and_four_decimals_below(value: float, shown: str) -> None:
    assert usd(value) == shown


def test_a_fresh_sessions_card_has_the_releases_lines() -> None:
    """Capture 03 of the release (a fresh gateway's main session), but for the first line: clawbus says
    what it is."""
    assert render(facts()) == (
        "🦞 clawbus 0.1.0 (OpenClaw 2026.9.6 compatible)\n"
        "Current time: Friday, November 27th, 2026 - 8:25 AM (UTC)\n"
        "Reference UTC: 2026-11-27 08:25 UTC\n"
        "⏱️ Uptime: process 17s · system 25m 17s\n"
        "\n"
        "🧠 Model: fake/fake-model\n"
        "\n"
        "📚 Context: ?/128k\n"
        "\n"
        "🧵 Session: main • updated just now\n"
        "\n"
        "⚙️ Execution: direct\n"
        "🤖 Runtime: clawbus\n"
        "🎛️ Modes: think off · fast off · elevated\n"
        "🪢 Queue: steer"
    )


def test_a_used_sessions_card_shows_its_tokens_cost_context_duration_and_tasks() -> None:
    """Capture 16 of the release (a finished sub-agent), with clawbus's lines."""
    text = render(
        facts(
            session_key="agent:main:subagent:x",
            auth="api-key (env: FAKE_KEY)",
            input_tokens=10,
            output_tokens=5,
            cost_usd=0.0,
            context_tokens=10,
            started_at=CAPTURED - 6_000,
            tasks_line="📌 Tasks: latest succeeded · subagent · probe-child",
        )
    )
    assert text.split("\n\n")[1:4] == [
        "🧠 Model: fake/fake-model\n🔑 Auth: api-key (env: FAKE_KEY)",
        "🧮 Tokens: 10 in / 5 out\n💵 Cost: $0.0000\n📚 Context: 10/128k (0%)",
        "🧵 Session: agent:main:subagent:x • duration 6s • updated just now\n"
        "📌 Tasks: latest succeeded · subagent · probe-child",
    ]


def test_usage_without_a_price_has_no_cost_line_and_zero_usage_none_at_all() -> None:
    priced_nowhere = render(facts(input_tokens=1_500, output_tokens=20))
    assert "🧮 Tokens: 1.5k in / 20 out\n📚 Context: ?/128k" in priced_nowhere
    assert "🧮" not in render(facts(input_tokens=0, output_tokens=0, cost_usd=0.0))


def test_a_pinned_model_names_the_configured_one_and_how_to_clear_it() -> None:
    text = render(facts(model_ref="fake/gpt-4", pinned=True))
    assert (
        "🧠 Model: fake/gpt-4 · pinned session; config primary fake/fake-model · clear /model default\n"
        in text
    )


def test_queued_runs_show_as_the_queues_depth_and_an_idle_session_its_age() -> None:
    text = render(facts(queue_depth=2, updated_at=CAPTURED - 7 * 60_000, thinking="high"))
    assert text.endswith("🎛️ Modes: think high · fast off · elevated\n🪢 Queue: steer (depth 2)")
    assert "🧵 Session: main • updated 7m ago" in text


def test_a_missing_uptime_leaves_its_line_out_and_a_route_adds_its_block() -> None:
    text = render(facts(uptime=None, route={"origin": {"provider": "slack"}}))
    assert "Uptime" not in text
    assert text.endswith(
        '\n\nRoute context:\n```json\n{\n  "origin": {\n    "provider": "slack"\n  }\n}\n```'
    )
