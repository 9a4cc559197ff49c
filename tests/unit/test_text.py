"""shared/base/text.py: one definition of control characters, of a token's digest and of how durations and
token counts read, used everywhere."""

from __future__ import annotations

import hashlib
import re

import pytest

from clawbus.api.routes.channels import Recipient
from clawbus.shared.base import session_keys
from clawbus.shared.base.text import CONTROL_CLASS, count, duration, has_control_characters, token_digest


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x1f", "\x7f", "\x80", "\x85", "\x9f"])
def test_c0_del_and_c1_are_control_characters(char: str) -> None:
    assert has_control_characters(f"a{char}b")


@pytest.mark.parametrize("text", ["plain", "é and ü", "日本", "emoji 🙂", "\xa0 (no-break space)"])
def test_printable_text_has_none(text: str) -> None:
    assert not has_control_characters(text)


@pytest.mark.parametrize("char", ["\x1f", "\x7f", "\x85"])
def test_session_keys_and_recipients_refuse_the_same_characters(char: str) -> None:
    with pytest.raises(session_keys.SessionKeyError):
        session_keys.parse(f"agent:main:cron:a{char}b")
    pattern = next(m.pattern for m in Recipient.__metadata__[0].metadata if hasattr(m, "pattern"))
    assert CONTROL_CLASS in pattern
    assert re.fullmatch(pattern, f"a{char}b") is None


def test_a_token_is_kept_as_the_hex_sha256_of_its_text() -> None:
    assert token_digest("secret") == hashlib.sha256(b"secret").hexdigest()


@pytest.mark.parametrize(
    ("ms", "shown"), [(0, "0s"), (59_999, "59s"), (72_000, "1m12s"), (3_720_000, "1h2m")]
)
def test_durations_read_well(ms: int, shown: str) -> None:
    assert duration(ms) == shown


def test_token_counts_read_well() -> None:
    assert (count(999), count(1200)) == ("999", "1.2k")
