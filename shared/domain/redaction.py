"""Secrets out of model-facing text (docs/contract.md §3): keep the first 6 and last 4 characters of each
secret."""

from __future__ import annotations

import re

from clawbus.shared.wire.models import Flow, Run

_MASK = "…"
_VALUE = r"(?P<q>[\"']?)(?P<value>[^\s\"',;]+)"
# Settings that hold secrets, however they are written: environment assignments (API_KEY=, DB_PASSWORD=),
# code and config (api_key = "...", password: ..., "apiKey": "..."), command-line flags (--api-key X,
# --token=X). A name must end in the word (so "monkey" is no key); lower-case forms need a value of 8 or more
# characters, as prose has "key: value" pairs of its own.
_UPPER_ASSIGNMENT = re.compile(
    r"(?P<name>\b(?:[A-Za-z0-9]+_)*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)\s*=\s*)" + _VALUE
)
_SECRET_WORD = (
    r"(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|key|token|secret|password|passwd|pwd)"
)
_ASSIGNMENT = re.compile(
    rf"(?P<name>(?:\b(?:[a-z0-9]+[_-])*{_SECRET_WORD}|\b[a-z][a-zA-Z0-9]*(?:Key|Token|Secret|Password))"
    rf"[\"']?\s*[:=]\s*)" + _VALUE
)
_FLAG = re.compile(
    r"(?P<name>--(?:api[_-]?key|access[_-]?key|auth[_-]?token|token|secret|password|passwd)(?:=|\s+))"
    + _VALUE,
    re.IGNORECASE,
)
_AUTHORIZATION = re.compile(
    r"(?P<name>\b(?:Bearer|Basic|Token)\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE
)
# The shapes of the providers' keys, masked wherever they stand.
_TOKEN_SHAPES = (
    r"sk-ant-[A-Za-z0-9_-]{16,}",  # Anthropic
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}",  # OpenAI, DeepSeek, ...
    r"sk_(?:live|test)_[A-Za-z0-9]{12,}",  # Stripe
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"xox[abeprs]-[A-Za-z0-9-]{10,}",  # Slack bot, user, app-level
    r"xapp-[A-Za-z0-9-]{10,}",
    r"gsk_[A-Za-z0-9]{20,}",  # Groq
    r"pplx-[A-Za-z0-9]{20,}",  # Perplexity
    r"npm_[A-Za-z0-9]{20,}",
    r"AKIA[0-9A-Z]{16}",  # AWS access key id
    r"AIza[0-9A-Za-z_-]{30,}",  # Google
    r"\d{6,12}:[A-Za-z0-9_-]{35}",  # Telegram bot
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JWT
)
_TOKENS = re.compile(r"\b(?:" + "|".join(_TOKEN_SHAPES) + r")")
_PEM = re.compile(r"-----BEGIN (?P<kind>[A-Z ]*PRIVATE KEY)-----.*?-----END (?P=kind)-----", re.DOTALL)


def mask(secret: str) -> str:
    """Short secrets are hidden whole: showing 10 of 12 characters would show the secret."""
    if len(secret) <= 12:
        return "*" * len(secret)
    return f"{secret[:6]}{_MASK}{secret[-4:]}"


def _masked_value(match: re.Match[str], min_length: int = 1) -> str:
    value = match["value"]
    if len(value) < min_length or _MASK in value or set(value) == {"*"}:  # too short, or masked already
        return match.group(0)
    return match["name"] + (match["q"] or "") + mask(value)


def redact(text: str) -> tuple[str, bool]:
    """The text with secrets masked, and whether anything was. Whole shapes go first (a token after
    ``key=`` keeps the same mask either way), then the settings that name a secret."""
    out = _PEM.sub(
        lambda m: f"-----BEGIN {m['kind']}-----{_MASK}redacted{_MASK}-----END {m['kind']}-----", text
    )
    out = _TOKENS.sub(lambda m: mask(m.group(0)), out)
    out = _UPPER_ASSIGNMENT.sub(_masked_value, out)
    out = _ASSIGNMENT.sub(lambda m: _masked_value(m, 8), out)
    out = _FLAG.sub(_masked_value, out)
    out = _AUTHORIZATION.sub(
        lambda m: m["name"] + mask(m["value"]) if _MASK not in m["value"] else m.group(0), out
    )
    return out, out != text


def scrub(text: str | None) -> str | None:
    return None if text is None else redact(text)[0]


def scrubbed_run(run: Run) -> Run:
    """A run as the API shows it: secrets out of its reply, error and context."""
    return run.model_copy(
        update={"reply": scrub(run.reply), "error": scrub(run.error), "context": scrub(run.context)}
    )


def scrubbed_flow(flow: Flow) -> Flow:
    steps = [step.model_copy(update={"reply": scrub(step.reply)}) for step in flow.steps]
    delivery = (
        flow.delivery.model_copy(update={"text": redact(flow.delivery.text)[0]}) if flow.delivery else None
    )
    return flow.model_copy(
        update={
            "message": redact(flow.message)[0],
            "task": scrub(flow.task),
            "error": scrub(flow.error),
            "steps": steps,
            "delivery": delivery,
        }
    )
