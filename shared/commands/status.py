"""``/status``: the session's status card, the text ``session_status`` answers (docs/contract.md §10)."""

from __future__ import annotations

from clawbus.shared.commands.base import Call, Outcome
from clawbus.shared.tools.status import session_status
from clawbus.shared.wire.models import ToolFailure
from clawbus.shared.wire.subagents_schema import SessionStatusParams

UNKNOWN = "⚠️ Unknown /status subcommand. Try /status or /status plugins."
# The release's /status plugins reports its plugins' health; clawbus loads none.
NO_PLUGINS = "⚠️ /status plugins: clawbus loads no plugins."


def status(call: Call) -> Outcome:
    card = session_status(call.ctx, SessionStatusParams())
    if isinstance(card, ToolFailure):  # the caller's own session always has a card; kept for the types
        return call.failed(card.error)
    rest = call.invocation.rest
    if not rest:
        return call.said(card.status_text)
    # As the release: the card, then what it says of the argument.
    return call.said(f"{card.status_text}\n\n{NO_PLUGINS if rest == 'plugins' else UNKNOWN}")
