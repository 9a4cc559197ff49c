"""sessions_list: its parameters and result (docs/contract.md §2).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from clawbus_client import models as client
from pydantic import BeforeValidator, Field, field_validator

from clawbus.shared.base.session_keys import SessionKind
from clawbus.shared.base.tool_args import optional_text, refused, string_list, truthy, whole_number
from clawbus.shared.wire.models import DeliveryContext, Params, Wire


def _archived(value: Any) -> bool | str:
    """``"all"``, or a flag (the release's ``archived``)."""
    return "all" if isinstance(value, str) and value.strip().lower() == "all" else bool(value)


def _pinned(value: Any) -> bool | None:
    return None if value is None else bool(value)


def present_text(name: str) -> BeforeValidator:
    """A filter the release reads as required once it is sent at all: sent, it must be a text with
    something in it (``<name> required``); it is then matched exactly, trimmed."""

    def read(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise refused(f"{name} required")
        return value.strip()

    return BeforeValidator(read)


# The release's filters clawbus refuses whenever they are sent (``shared.tools.list.refusal``): a model is
# not offered them.
REFUSED_FILTERS = ("relationship", "projectId", "group")


class SessionsListParams(Params):
    kinds: Annotated[list[str] | None, string_list] = Field(
        None, description="Only these kinds: main, group, cron, hook, node, other."
    )
    limit: Annotated[int | None, whole_number("limit", least=1, high=200)] = Field(
        None, ge=1, description="At most this many (default 100, at most 200)."
    )
    offset: Annotated[int | None, whole_number("offset", least=0)] = Field(
        None, ge=0, description="Skip this many (the nextOffset of the page before)."
    )
    active_minutes: Annotated[int | None, whole_number("activeMinutes", least=1)] = Field(
        None, ge=1, description="Only sessions active in the last N minutes."
    )
    message_limit: Annotated[int | None, whole_number("messageLimit", least=0, high=20)] = Field(
        None, ge=0, description="Include each session's last N messages (0-20)."
    )

    label: Annotated[str | None, optional_text] = Field(None, description="Only the session with this label.")
    agent_id: Annotated[str | None, optional_text] = Field(None, description="Only this agent's sessions.")
    search: Annotated[str | None, optional_text] = Field(
        None, description="Only sessions whose key, label or name holds this text."
    )
    active_only: Annotated[bool, truthy] = Field(
        False, description="Only sessions with a run queued or running."
    )
    exclude_subagents: Annotated[bool, truthy] = Field(False, description="Leave spawned sessions out.")
    archived: Annotated[bool | Literal["all"], BeforeValidator(_archived)] = Field(
        False, description='true: only archived sessions; "all": archived ones too.'
    )
    pinned: Annotated[bool | None, BeforeValidator(_pinned)] = Field(
        None, description="Only pinned (true) or unpinned (false) sessions."
    )
    include_last_message: Annotated[bool, truthy] = Field(
        False, description="Add each session's last message, cut short (lastMessagePreview)."
    )
    include_derived_titles: Annotated[bool, truthy] = Field(
        False, description="Add a title for each session (derivedTitle)."
    )
    # Who owns or made a session: clawbus records it for spawned sessions only (the spawning agent, the
    # row's ``owner`` and ``createdActor``), and where they work (``spawnedWorkspaceDir``).
    owner_id: Annotated[str | None, present_text("ownerId")] = Field(
        None, description="Only sessions owned by this agent id (spawned sessions: their spawner)."
    )
    creator_id: Annotated[str | None, present_text("creatorId")] = Field(
        None, description="Only sessions created by this agent id (spawned sessions: their spawner)."
    )
    workspace_dir: Annotated[str | None, present_text("workspaceDir")] = Field(
        None, description="Only spawned sessions working in exactly this directory (spawnedWorkspaceDir)."
    )
    # The release's filters clawbus has nothing to match against (``shared.tools.list.refusal``); a group is
    # read as sent: the release takes only a text, and "" (the ungrouped sessions) is one.
    relationship: Annotated[str | None, present_text("relationship")] = None
    project_id: Annotated[str | None, present_text("projectId")] = None
    group: Any = None

    @field_validator("kinds")
    @classmethod
    def _lowercase(cls, kinds: list[str] | None) -> list[str] | None:
        """Kinds are matched lowercased; one the release does not know matches no session."""
        return None if kinds is None else [kind.lower() for kind in kinds]


class Actor(client.Actor, Wire):
    """Who made or owns a session, as the release writes it (an agent, for a spawned session)."""

    type: Literal["agent"] = "agent"
    identity: dict[str, str]

    @classmethod
    def agent(cls, agent_id: str) -> Actor:
        return cls(id=agent_id, identity={"type": "agent", "id": agent_id})


class Owner(client.Owner, Wire):
    actor: Actor


class SessionRow(client.SessionRow, Wire):
    """A ``sessions_list`` row: the release's fields (docs/contract.md §2), then clawbus's own."""

    kind: SessionKind
    created_actor: Actor | None = None
    owner: Owner | None = None
    status: Literal["queued", "running", "done", "failed", "killed", "timeout"] | None = None
    delivery_context: DeliveryContext | None = None


class SessionsListResult(client.SessionsListResult, Wire):
    sessions: list[SessionRow]
    limit_applied: int = 100
