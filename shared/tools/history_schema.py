"""sessions_history: its parameters and result (docs/contract.md §3).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from shared.models import Count, Params, SessionRef, Wire, clamped


class SessionsHistoryParams(Params):
    session_key: SessionRef = Field(description="The session's key (from sessions_list) or sessionId.")
    limit: Annotated[Count | None, clamped(200, 1, 1000)] = Field(None, description="Last N messages.")
    include_tools: bool = Field(False, description="Include tool calls and tool results.")


class SessionsHistoryResult(Wire):
    session_key: str
    messages: list[dict[str, Any]]
    truncated: bool
    dropped_messages: bool
    content_truncated: bool
    content_redacted: bool
    bytes: int
