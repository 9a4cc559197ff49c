"""Secrets out of model-facing text (SPEC 3): keep the first 6 and last 4 characters of each secret."""

from __future__ import annotations

import re

from shared.models import Flow, Run

_MASK = "…"
# Values of KEY=, API_KEY=, GITHUB_TOKEN=, CLIENT_SECRET=, DB_PASSWORD= (quoted or not).
_ASSIGNMENT = re.compile(
    r"(?P<name>\b(?:[A-Za-z0-9]+_)*(?:KEY|TOKEN|SECRET|PASSWORD)\s*=\s*)(?P<q>[\"']?)(?P<value>[^\s\"']+)"
)
_TOKENS = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{12,}|sk_(?:live|test)_[A-Za-z0-9]{12,}|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,})"
)
_BEARER = re.compile(r"(?P<name>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_PEM = re.compile(r"-----BEGIN (?P<kind>[A-Z ]*PRIVATE KEY)-----.*?-----END (?P=kind)-----", re.DOTALL)


def mask(secret: str) -> str:
    """Short secrets are hidden whole: showing 10 of 12 characters would show the secret."""
    if len(secret) <= 12:
        return "*" * len(secret)
    return f"{secret[:6]}{_MASK}{secret[-4:]}"


def redact(text: str) -> tuple[str, bool]:
    """The text with secrets masked, and whether anything was. Assignments go first so a masked value is
    not matched again as a token."""
    out = _PEM.sub(
        lambda m: f"-----BEGIN {m['kind']}-----{_MASK}redacted{_MASK}-----END {m['kind']}-----", text
    )
    out = _ASSIGNMENT.sub(lambda m: m["name"] + m["q"] + mask(m["value"]), out)
    out = _TOKENS.sub(lambda m: mask(m.group(0)), out)
    out = _BEARER.sub(lambda m: m["name"] + mask(m["value"]), out)
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
