"""shared/domain/redaction.py: secrets keep their first 6 and last 4 characters."""

from __future__ import annotations

import pytest

from clawbus.shared.domain.redaction import redact


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


# Every shape a secret takes in what agents write: what stays visible, and that the secret does not.
SECRET_SHAPES = [
    ('{"apiKey": "abcd1234efgh5678ijkl"}', '{"apiKey": "abcd12…ijkl"}', "abcd1234efgh5678ijkl"),
    ("password: hunter2hunter2", "password: hunter…ter2", "hunter2hunter2"),
    ("db:\n  password: correcthorsebattery", "db:\n  password: correc…tery", "correcthorsebattery"),
    ('api_key = "lowercase-secret-value-123"', 'api_key = "lowerc…-123"', "lowercase-secret-value-123"),
    ("client_secret=s3cr3t-v4lu3-0123", "client_secret=s3cr3t…0123", "s3cr3t-v4lu3-0123"),
    ("curl --api-key AbCdEf1234567890XyZ", "curl --api-key AbCdEf…0XyZ", "AbCdEf1234567890XyZ"),
    ("cli --token=tok_0123456789abcdef", "cli --token=tok_01…cdef", "tok_0123456789abcdef"),
    ("Authorization: Bearer abcdefghijklmnop.qrstuvwxyz", "Authorization: Bearer abcdef…wxyz", "ghijklmnop"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic dXNlcj…ZA==", "cjpwYXNzd29y"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "jwt eyJhbG…sR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    ("sk-proj-abcdefghijklmnopqrstuvwxyz123456", "sk-pro…3456", "abcdefghijklmnop"),
    ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "sk-ant…0123", "abcdefghijklmnop"),
    ("xoxb-123456789012-1234567890123-abcdefghijkl", "xoxb-1…ijkl", "1234567890123"),
    ("xapp-1-A0123456789-0123456789012-abcdef", "xapp-1…cdef", "0123456789012"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_ab…6789", "abcdefghijklmnop"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv", "github…stuv", "0123456789_abcdefg"),
    ("gsk_abcdefghijklmnopqrstuvwxyz0123456789ABCD", "gsk_ab…ABCD", "abcdefghijklmnop"),
    ("pplx-abcdefghijklmnopqrstuvwxyz0123456789abcd", "pplx-a…abcd", "bcdefghijklmnop"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_ab…6789", "abcdefghijklmnop"),
    ("AKIAIOSFODNN7EXAMPLE", "AKIAIO…MPLE", "SFODNN7EXA"),
    ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", "bot 123456…saw1", "AAHdqTcvCH1vGWJxfSeof"),
    ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "AIzaSy…rstu", "1234567890abcdefghij"),
]


@pytest.mark.parametrize(("text", "expected", "secret"), SECRET_SHAPES)
def test_every_shape_of_secret_is_masked(text: str, expected: str, secret: str) -> None:
    out, changed = redact(text)
    assert changed
    assert out == expected
    assert secret not in out


@pytest.mark.parametrize(
    "text",
    ["tokens: 1.2k (in 800 / out 400)", "the password is not here", "key: value", "Stats: runtime 1m12s"],
)
def test_prose_about_keys_and_tokens_is_left_alone(text: str) -> None:
    assert redact(text) == (text, False)
