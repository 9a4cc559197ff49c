"""Reading a session through the API the way a test on the real stack watches it."""

from __future__ import annotations

from clawbus_client import APIError, Client

from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.ports.storage import Storage
from clawbus.shared.tools.history_view import run_of


def first_run(client: Client, session_key: str) -> str | None:
    """The run whose input opens the session's transcript, once a worker has taken it (a claim appends
    the input); None before that, or while the session does not exist."""
    try:
        result = client.sessions_history(session_key, include_tools=True, limit=10)
    except APIError:
        return None
    messages = getattr(result, "messages", [])  # a refusal (no such session yet) has none
    # A run's input is the message keyed by its run (``<runId>:user``), a person's or a forwarded one.
    return next((run_of(m) for m in messages if m.get("idempotencyKey")), None)


def open_sessions(store: Storage, config: Config, *session_keys: str) -> None:
    """Open these sessions (stored keys) as PUT /v1/sessions/{key} does: a send opens none."""
    for session_key in session_keys:
        store.sessions.create(new_entry(config, session_key, store.clock.now_ms()))
