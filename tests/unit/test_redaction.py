"""shared/redaction.py: secrets keep their first 6 and last 4 characters."""

from __future__ import annotations

import pytest

from shared.redaction import redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-abcdefghijklmnopqrstuvwxyz1234", "key sk-abc…1234"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_ab…6789"),
        ("slack xoxb-123456789012-abcdefghijkl", "slack xoxb-1…ijkl"),
        ("Authorization: Bearer abcdefghijklmnop.qrstuvwxyz", "Authorization: Bearer abcdef…wxyz"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstu", "OPENAI_API_KEY=sk-pro…rstu"),
        ('DB_PASSWORD="correct-horse-battery"', 'DB_PASSWORD="correc…tery"'),
        ("GITHUB_TOKEN=short", "GITHUB_TOKEN=*****"),
        ("AWS AKIAABCDEFGHIJKLMNOP", "AWS AKIAAB…MNOP"),
    ],
)
def test_known_secret_forms_are_masked(text: str, expected: str) -> None:
    assert redact(text) == (expected, True)


def test_private_keys_are_removed_whole() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"
    out, changed = redact(f"here: {pem} done")
    assert changed
    assert "MIIE" not in out
    assert out.startswith("here: -----BEGIN RSA PRIVATE KEY-----")
    assert out.endswith("done")


@pytest.mark.parametrize("text", ["a monkey=banana", "the key is in the drawer", "sk-short", "plain text"])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == (text, False)
