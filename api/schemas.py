"""Request bodies of the HTTP routes that are not tool parameters."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from clawbus.shared.base.text import CONTROL_CLASS, has_control_characters
from clawbus.shared.wire.models import QUEUE_MODES, THINKING_LEVELS


def _optional_text(value: Any) -> str | None:
    """OpenClaw reads these fields leniently: a value that is no string, or only blanks, is absent."""
    return value.strip() or None if isinstance(value, str) else None


def _object_or_none(value: Any) -> dict[str, Any] | None:
    # ``args`` that is no object is no arguments at all, as the release reads it.
    return value if isinstance(value, dict) else None


OptionalText = Annotated[str | None, BeforeValidator(_optional_text)]


class InvokeRequest(BaseModel):
    """OpenClaw's ``/tools/invoke`` body, read as the release reads it (docs/contract.md, "On the wire"):
    ``name`` or ``tool`` (``name`` wins), ``args`` (anything but an object counts as none), the caller
    ``sessionKey`` (default ``main``), ``action`` (merged into ``args.action`` for a tool that has one);
    ``agentId``, ``idempotencyKey`` and ``dryRun`` are accepted, unknown fields ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    tool: OptionalText = None
    action: OptionalText = None
    args: Annotated[dict[str, Any] | None, BeforeValidator(_object_or_none)] = None
    session_key: OptionalText = None
    agent_id: OptionalText = None
    idempotency_key: OptionalText = None
    dry_run: Any = None
    # The run this call is made from (an agent's tool call): sends from it count toward the hop limit.
    run_id: str | None = Field(None, min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")
    # False: a call that would wait for a run (sessions_send with timeoutSeconds > 0) answers ``accepted``
    # at once, its timeoutSeconds still setting the exchange's step bound; wait with /v1/runs/{id}/wait.
    # The CLI uses it so that Ctrl-C during a wait knows which run to name.
    wait: bool = True

    @model_validator(mode="before")
    @classmethod
    def _name_wins(cls, data: Any) -> Any:
        """``name ?? tool``, as the release reads it: a ``name`` that is there at all (even no string)
        is the one read."""
        if not isinstance(data, dict):
            return data
        named = data.get("name")
        return {**data, "tool": named if named is not None else data.get("tool")}


# What the published schema says of the body: exactly what the lenient reading above accepts, so a
# generated client and a fuzzer see the server's rules. A name is required, as ``tool`` or ``name``.
INVOKE_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "pattern": r"\S", "description": "The tool's name."},
        "name": {"type": "string", "pattern": r"\S", "description": "The tool's name (wins over tool)."},
        "action": {"description": "Merged into args.action for a tool with an action (subagents)."},
        "args": {"description": "The tool's arguments (an object; anything else is no arguments)."},
        "sessionKey": {"description": "The calling session (default main)."},
        "agentId": {"description": "The calling session's agent."},
        "idempotencyKey": {},
        "dryRun": {},
        "runId": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": r"^[A-Za-z0-9_-]+$"},
        "wait": {"type": "boolean"},
    },
    "anyOf": [{"required": ["tool"]}, {"required": ["name"]}],
}


class TextContent(BaseModel):
    type: str = "text"
    text: str


class ToolResult(BaseModel):
    """OpenClaw's tool result: ``content``, what a model reads (the details as JSON, or a status card's
    text), and ``details``, the result itself."""

    content: list[TextContent]
    details: dict[str, Any]


class InvokeResponse(BaseModel):
    ok: bool = True
    result: ToolResult


class SessionPatchBody(BaseModel):
    """Fields that may be changed on a session; ``null`` clears one."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    label: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        # No surrounding whitespace and no control characters, said in the schema as the check does.
        pattern=rf"^[^\s{CONTROL_CLASS}](?:[^{CONTROL_CLASS}]*[^\s{CONTROL_CLASS}])?$",
    )
    display_name: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        pattern=rf"^[^\s{CONTROL_CLASS}](?:[^{CONTROL_CLASS}]*[^\s{CONTROL_CLASS}])?$",
    )
    send_policy: str | None = Field(None, json_schema_extra={"enum": ["allow", "deny", None]})
    model: str | None = Field(None, min_length=1, max_length=256)
    thinking_level: str | None = Field(None, json_schema_extra={"enum": [*THINKING_LEVELS, None]})
    queue_mode: str | None = Field(None, json_schema_extra={"enum": [*QUEUE_MODES, None]})

    @field_validator("send_policy")
    @classmethod
    def _policy(cls, value: str | None) -> str | None:
        if value is not None and value not in ("allow", "deny"):
            raise ValueError('invalid sendPolicy (use "allow"|"deny")')
        return value

    @field_validator("thinking_level")
    @classmethod
    def _thinking(cls, value: str | None) -> str | None:
        if value is not None and value not in THINKING_LEVELS:
            raise ValueError(f'Invalid thinking level "{value}". Use one of: {", ".join(THINKING_LEVELS)}')
        return value

    @field_validator("queue_mode")
    @classmethod
    def _queue_mode(cls, value: str | None) -> str | None:
        if value is not None and value not in QUEUE_MODES:
            raise ValueError(f'Invalid queue mode "{value}". Use one of: {", ".join(QUEUE_MODES)}')
        return value

    @field_validator("label")
    @classmethod
    def _label(cls, value: str | None) -> str | None:
        if value is not None and (value != value.strip() or has_control_characters(value)):
            raise ValueError("must not have surrounding whitespace or control characters")
        return value


class WaitTimeout(BaseModel):
    status: str = "timeout"
    run_id: str = Field(serialization_alias="runId")
