"""Which agent and which session a request goes to, as the release decides them.

The agent: the header ``x-openclaw-agent-id`` (or ``x-openclaw-agent``), else the ``model``
(``openclaw`` and ``openclaw/default``: the default agent; ``openclaw/<id>``, ``openclaw:<id>``,
``agent:<id>``), else the default agent. A ``model`` of any other form is refused even with the header.

The session: the header ``x-openclaw-session-key`` (scoped to the agent when it is not ``agent:...``
already; the sub-agent, cron and ACP namespaces are refused), else from ``user``
(``agent:<id>:openai-user:<user>`` for chat completions, ``agent:<id>:openresponses-user:<user>`` for
responses), else a fresh session for this one request (``agent:<id>:openai:<uuid>``,
``agent:<id>:openresponses:<uuid>``). Keys are lowercased whole, as every clawbus key is; a ``user`` a key
cannot hold (whitespace, control characters, too long) is refused rather than rewritten.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping

from clawbus.api.openai_compat.errors import invalid
from clawbus.shared.base import session_keys
from clawbus.shared.config import Config

OPENCLAW_MODEL = "openclaw"
DEFAULT_MODEL = "openclaw/default"
_AGENT_MODEL = re.compile(r"^(?:openclaw[:/]|agent:)(?P<agent>[a-z0-9][a-z0-9_-]{0,63})$", re.IGNORECASE)
_RESERVED_NAMESPACES = ("subagent:", "cron:", "acp:")
INVALID_MODEL = "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."
RESERVED_KEY = "`x-openclaw-session-key` cannot use reserved internal session namespaces."


def is_agent_model(model: str) -> bool:
    """The release's model ids: anything else is not a model it serves."""
    raw = model.strip()
    return raw.lower() in (OPENCLAW_MODEL, DEFAULT_MODEL) or bool(_AGENT_MODEL.match(raw))


def agent_of_model(config: Config, model: str) -> str | None:
    """The agent a model id names (configured or not); None for no agent model id."""
    raw = model.strip()
    if raw.lower() in (OPENCLAW_MODEL, DEFAULT_MODEL):
        return config.default_agent.id
    found = _AGENT_MODEL.match(raw)
    return found["agent"].lower() if found else None


def model_ids(agents: list[str]) -> list[str]:
    """What ``GET /v1/models`` lists: the two aliases, then ``openclaw/<id>`` for each agent given."""
    return [OPENCLAW_MODEL, DEFAULT_MODEL, *(f"openclaw/{agent}" for agent in agents)]


def agent_for(config: Config, model: str | None, headers: Mapping[str, str]) -> str:
    """The agent the request is for; 400 ``Unknown agent '<id>'.`` for one not configured."""
    if model and model.strip() and not is_agent_model(model):
        raise invalid(INVALID_MODEL)
    named = (headers.get("x-openclaw-agent-id") or "").strip() or (
        headers.get("x-openclaw-agent") or ""
    ).strip()
    if named:
        try:
            agent = session_keys.normalize_agent_id(named)
        except session_keys.SessionKeyError:
            raise invalid(f"Unknown agent '{named}'.") from None
        return _known(config, agent)
    from_model = agent_of_model(config, model) if model else None
    return _known(config, from_model) if from_model else config.default_agent.id


def _known(config: Config, agent: str) -> str:
    if config.agent(agent) is None:
        raise invalid(f"Unknown agent '{agent}'.")
    return agent


def session_for(config: Config, agent: str, headers: Mapping[str, str], user: str | None, prefix: str) -> str:
    """The stored key of the request's session; ``prefix`` is ``openai`` or ``openresponses``."""
    explicit = (headers.get("x-openclaw-session-key") or "").strip()
    if explicit and _reserved(explicit):
        raise invalid(RESERVED_KEY)
    written = explicit or (f"{prefix}-user:{user.strip()}" if user and user.strip() else None)
    rest = written or f"{prefix}:{uuid.uuid4()}"
    field = "x-openclaw-session-key" if explicit else "user"
    try:
        return session_keys.canonical(
            rest, caller_agent=agent, main_key=config.session.main_key, global_scope=config.global_scope
        )
    except session_keys.SessionKeyError as exc:
        raise invalid(f"Invalid `{field}` for a session key: {exc}") from None


def _reserved(key: str) -> bool:
    lowered = key.lower()
    if lowered.startswith(_RESERVED_NAMESPACES):
        return True
    parts = lowered.split(":", 2)
    return len(parts) == 3 and parts[0] == "agent" and parts[2].startswith(_RESERVED_NAMESPACES)
