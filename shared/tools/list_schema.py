"""sessions_list: its parameters and result (docs/contract.md §2).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from shared.models import Count, Params, SessionFacts, Wire, clamped
from shared.session_keys import SessionKind


class SessionsListParams(Params):
    kinds: list[Annotated[str, Field(max_length=32)]] | None = Field(
        None, max_length=16, description="Only these kinds: main, group, cron, hook, node, other."
    )
    limit: Annotated[Count | None, clamped(50, 1, 200)] = Field(
        None, description="At most this many (1-200)."
    )
    active_minutes: Count | None = Field(
        None, ge=1, description="Only sessions active in the last N minutes."
    )
    message_limit: Annotated[Count | None, clamped(0, 0, 20)] = Field(
        None, description="Include each session's last N messages (0-20)."
    )

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str] | None) -> list[str] | None:
        """Unknown kinds are dropped; none left means no filter (docs/contract.md §2)."""
        if kinds is None:
            return None
        wanted = {k.strip().lower() for k in kinds} & {"main", "group", "cron", "hook", "node", "other"}
        return sorted(wanted) or None


class SessionRow(SessionFacts):
    key: str
    kind: SessionKind
    channel: str
    updated_at: int
    session_id: str
    transcript_path: str | None = None
    messages: list[dict[str, Any]] | None = None


class SessionsListResult(Wire):
    count: int
    sessions: list[SessionRow]
