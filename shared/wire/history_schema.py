"""sessions_history: its parameters and result (docs/contract.md §3).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated

from clawbus_client import models as client
from pydantic import Field, model_validator

from clawbus.shared.base.tool_args import (
    optional_text,
    refused,
    required,
    required_text,
    truthy,
    whole_number,
)
from clawbus.shared.wire.models import Params, Wire


class SessionsHistoryParams(Params):
    session_key: Annotated[str, required_text("sessionKey")] = Field(
        **required(), description="The session's key (from sessions_list) or sessionId."
    )
    # Above 1000 the release fails the call; clawbus reads 1000 (docs/contract.md, differences).
    limit: Annotated[int | None, whole_number("limit", least=1, high=1000)] = Field(
        None, ge=1, description="Last N messages (default 200)."
    )
    offset: Annotated[int | None, whole_number("offset", least=0)] = Field(
        None, ge=0, description="Skip this many of the newest messages (the nextOffset of the page before)."
    )
    pending_before: Annotated[int | None, whole_number("pendingBefore", least=1)] = Field(
        None,
        ge=1,
        description="Read the pending inputs older than this one (the nextBefore of the page before).",
    )
    include_tools: Annotated[bool, truthy] = Field(False, description="Include tool calls and tool results.")
    message_id: Annotated[str | None, optional_text] = Field(
        None,
        description="Return history around this message id (__openclaw.id). Ignores offset; limit bounds "
        "the window.",
    )
    session_id: Annotated[str | None, optional_text] = Field(
        None, description="The session id that owns messageId. Requires messageId."
    )

    @model_validator(mode="after")
    def _session_id_needs_a_message(self) -> SessionsHistoryParams:
        """The release's rule: a transcript is named only to find a message in it."""
        if self.session_id is not None and self.message_id is None:
            raise refused("sessionId requires messageId")
        return self


class PendingInputs(client.PendingInputs, Wire):
    """Messages accepted into the session that no run has taken in yet (queued behind its running run): one
    page of them, the newest first chosen and shown oldest first, as the release pages them."""


class SessionsHistoryResult(client.SessionsHistoryResult, Wire):
    pending_inputs: PendingInputs = Field(default_factory=PendingInputs)
