"""shared/commands/durations.py: durations and times as the release's commands read and write them."""

from __future__ import annotations

import pytest

from clawbus.shared.commands.durations import binding_duration, iso, parse_duration_ms, stamped


@pytest.mark.parametrize(
    ("raw", "unit", "ms"),
    [
        ("30m", "h", 1_800_000),
        ("2h", "ms", 7_200_000),
        ("1h30m", "h", 5_400_000),
        ("1H30M", "h", 5_400_000),
        ("1.5s", "ms", 1500),
        ("500", "ms", 500),
        ("24", "h", 86_400_000),
        ("1d", "h", 86_400_000),
        ("250ms", "h", 250),
        (" 5m ", "h", 300_000),
    ],
)
def test_durations_read(raw: str, unit: str, ms: int) -> None:
    assert parse_duration_ms(raw, default_unit=unit) == ms


@pytest.mark.parametrize("raw", ["", "soon", "1h30", "m5", "-5m", "5 m", "1e3", "1h-30m"])
def test_what_is_no_duration_is_refused(raw: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_ms(raw, default_unit="h")


@pytest.mark.parametrize(
    ("ms", "label"),
    [
        (0, "disabled"),
        (30_000, "<1m"),
        (60_000, "1m"),
        (5_400_000, "90m"),
        (7_200_000, "2h"),
        (86_400_000, "24h"),
    ],
)
def test_a_binding_limit_is_written_in_minutes_or_whole_hours(ms: int, label: str) -> None:
    assert binding_duration(ms) == label


def test_times_are_written_as_javascripts_iso_strings_with_their_age() -> None:
    assert iso(1_795_779_256_080) == "2026-11-27T11:34:16.080Z"
    assert stamped(1_795_779_256_080, 1_795_779_256_080 + 125_000) == "2026-11-27T11:34:16.080Z (2m ago)"
    assert stamped(None, 0) == "n/a"
    assert stamped(2_000, 1_000) == "1970-01-01T00:00:02.000Z (n/a)"  # a moment still to come
