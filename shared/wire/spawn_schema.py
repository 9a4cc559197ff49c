"""sessions_spawn: its parameters and result (docs/contract.md §6); the attachments' shapes
are in ``shared.domain.attachments``.

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from clawbus_client import models as client
from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from clawbus.shared.base.tool_args import (
    optional_text,
    refused,
    required,
    required_text,
    truthy,
    whole_number,
)
from clawbus.shared.wire.attachments import AttachmentIn, AttachmentReceipt
from clawbus.shared.wire.models import Params, Wire, message_size


class AttachAs(Params):
    mount_path: str | None = Field(None, max_length=1024)


# The release's options clawbus refuses whenever they would change what a spawn does (docs/contract.md §6,
# ``shared.tools.spawn_options``): a model is not offered them.
REFUSED_OPTIONS = (
    "runtime",
    "visible",
    "cwd",
    "placement",
    "group",
    "projectId",
    "projectGitUrl",
    "worktree",
    "worktreeName",
    "worktreeBaseRef",
    "collect",
    "outputSchema",
    "fastMode",
    "groupId",
)

# Channel routing belongs to sessions_send: the release refuses these by the name they were sent under.
ROUTING_ARGUMENTS = ("target", "transport", "channel", "to", "threadId", "thread_id", "replyTo", "reply_to")
TIMEOUT_ARGUMENTS = ("timeoutSeconds", "timeout_seconds")


def _refuse_misplaced(data: Any) -> Any:
    """A send's arguments given to a spawn are refused, in the release's words, naming what was sent."""
    if not isinstance(data, dict):
        return data
    for name in TIMEOUT_ARGUMENTS:
        if data.get(name) is not None:
            raise refused(
                f'sessions_spawn does not support "{name}". Use "runTimeoutSeconds" for a per-run timeout.'
            )
    for name in ROUTING_ARGUMENTS:
        if data.get(name) is not None:
            raise refused(f'sessions_spawn does not support "{name}"; remove channel-delivery parameters.')
    return data


def _model_override(value: Any) -> Any:
    """``default`` (or nothing) is no override, as the release reads it."""
    if not isinstance(value, str) or not value.strip() or value.strip().lower() == "default":
        return None
    return value.strip()


def _one_of(*choices: str) -> BeforeValidator:
    """One of ``choices``; anything else counts as not given (the tool's default)."""
    return BeforeValidator(lambda value: value if value in choices else None)


# A flag the release reads as ``=== true``: only JSON ``true`` sets it.
only_true = BeforeValidator(lambda value: value is True)
# ``expectsCompletionMessage`` is read as ``!== false``: only JSON ``false`` turns it off.
unless_false = BeforeValidator(lambda value: value is not False)


def _completion_target(value: Any) -> Any:
    """``parent`` or nothing; anything else is refused, in the release's words."""
    if value is None or value == "parent":
        return value
    raise refused('sessions_spawn completionTarget must be "parent" or omitted.')


class SessionsSpawnParams(Params):
    task: Annotated[str, required_text("task"), AfterValidator(message_size)] = Field(
        **required(), description="What the sub-agent should do."
    )
    label: Annotated[str | None, optional_text] = Field(
        None, max_length=128, description="A name for the child session."
    )
    agent_id: Annotated[str | None, optional_text] = Field(
        None, max_length=64, description="The agent to spawn (agents_list); default: yours."
    )
    model: Annotated[str | None, BeforeValidator(_model_override)] = Field(
        None, max_length=256, description="Model ref <provider>/<model> for the child."
    )
    thinking: Annotated[str | None, optional_text] = Field(
        None, max_length=32, description="off, minimal, low, medium or high."
    )
    run_timeout_seconds: Annotated[int | None, whole_number("runTimeoutSeconds", least=0)] = Field(
        None, ge=0, description="End the child's run after this long (0: no limit)."
    )
    thread: Annotated[bool, truthy] = False
    mode: Annotated[Literal["run", "session"] | None, _one_of("run", "session")] = None
    cleanup: Annotated[Literal["delete", "keep"] | None, _one_of("delete", "keep")] = None
    sandbox: Annotated[Literal["inherit", "require"] | None, _one_of("inherit", "require")] = None
    expects_completion_message: Annotated[bool, unless_false] = Field(
        True, description="false: fire-and-forget; no completion report comes back when it ends."
    )
    completion_target: Annotated[Literal["parent"] | None, BeforeValidator(_completion_target)] = Field(
        None,
        description="parent: the report comes back as a private turn of yours; nothing is posted to a "
        'channel. Only for mode="run" without thread.',
    )
    context: Annotated[Literal["isolated", "fork"] | None, _one_of("isolated", "fork")] = None
    task_name: Annotated[str | None, optional_text] = Field(
        None,
        description="A stable handle to target the child by later (subagents); [a-z][a-z0-9_-]{0,63}, not "
        "last or all.",
    )
    # clawbus never loads workspace bootstrap files into a run, so every child's context is the release's
    # light one: the flag is taken and changes nothing (docs/contract.md §6).
    light_context: Annotated[bool, only_true] = Field(
        False, description="Light bootstrap context (every clawbus child has it)."
    )
    attachments: list[AttachmentIn] | None = Field(None, max_length=1000)
    attach_as: AttachAs | None = None
    # The release's options clawbus refuses unless they ask for what it does anyway (``unsupported``); read
    # as sent, so a refusal can name the value that cannot be honoured.
    runtime: Any = None
    visible: Any = None
    cwd: Any = None
    placement: Any = None
    group: Any = None
    project_id: Any = None
    project_git_url: Any = None
    worktree: Any = None
    worktree_name: Any = None
    worktree_base_ref: Any = None
    collect: Any = None
    output_schema: Any = None
    fast_mode: Any = None
    group_id: Any = None

    _misplaced = model_validator(mode="before")(_refuse_misplaced)


# What a spawn's result tells the requester to do about the child's report.
NOTE = (
    "The final reply returns to the requester as a completion event. Continue any independent work. Wait for "
    "completion events for ALL required children before your final answer; never busy-poll. If a completion "
    "arrives after your final answer, reply ONLY with NO_REPLY."
)


# ``expectsCompletionMessage: false``: the release's "quiet" run.
QUIET_NOTE = "Quiet run: no completion notification is sent. Do not wait for an announcement."
# ``completionTarget: "parent"``: the report comes back as a private turn of the requester.
PRIVATE_NOTE = (
    "The result returns privately to the requester. No result is automatically sent to a channel; the "
    "requester may review, continue work, or remain silent. Continue independent work; completion will "
    "trigger a private requester turn. Never busy-poll."
)


class SpawnResult(client.SpawnResult, Wire):
    status: Literal["accepted"] = "accepted"
    mode: Literal["run", "session"]
    completion_target: Literal["parent"] | None = None
    context: Literal["isolated", "fork"] = "isolated"
    note: str = NOTE
    attachments: AttachmentReceipt | None = None
