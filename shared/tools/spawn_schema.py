"""sessions_spawn: its parameters and result (docs/contract.md §6); the attachments' shapes
are in ``shared.attachments``.

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.attachments import AttachmentIn, AttachmentReceipt
from shared.models import AgentRef, Label, MessageText, Params, Wire


class AttachAs(Params):
    mount_path: str | None = Field(None, max_length=1024)


class SessionsSpawnParams(Params):
    task: MessageText = Field(description="What the sub-agent should do.")
    label: Label | None = Field(None, description="A name for the child session.")
    agent_id: AgentRef | None = Field(None, description="The agent to spawn (agents_list); default: yours.")
    model: str | None = Field(None, max_length=256, description="Model ref <provider>/<model> for the child.")
    thinking: str | None = Field(None, max_length=32, description="off, minimal, low, medium or high.")
    run_timeout_seconds: float | None = Field(
        None, ge=0, strict=True, description="End the child's run after this long."
    )
    thread: bool = False
    mode: Literal["run", "session"] | None = None
    cleanup: Literal["delete", "keep"] = "keep"
    sandbox: Literal["inherit", "require"] = "inherit"
    attachments: list[AttachmentIn] | None = Field(None, max_length=1000)
    attach_as: AttachAs | None = None
    # Channel routing belongs to sessions_send; these are accepted only to be refused with that advice.
    target: Any = None
    channel: Any = None
    to: Any = None
    thread_id: Any = None
    reply_to: Any = None


class SpawnResult(Wire):
    status: Literal["accepted"] = "accepted"
    run_id: str
    child_session_key: str
    mode: Literal["run", "session"]
    note: str
    attachments: AttachmentReceipt | None = None
    # The fan-out guard's warning: many reports of this session's children are unread.
    warning: str | None = None
