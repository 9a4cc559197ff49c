"""An A2A task is a clawbus run (docs/contract.md §12): the run seen as the protocol's ``Task`` and its
stream events. The run's input is the user message; its reply, the artifact ``reply`` and the final agent
message; tool calls and provenance stay inside clawbus. Every text is redacted as the API redacts it."""

from __future__ import annotations

import re

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.timestamp_pb2 import Timestamp

from clawbus.shared.domain.redaction import scrub
from clawbus.shared.wire.models import Run, RunStatus

# The session kind of A2A contexts: ``agent:<agentId>:a2a:<contextId>``.
CONTEXT_KIND = "a2a"
# A context id names a session (lowercased, as every key is).
CONTEXT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REPLY_ARTIFACT = "reply"

STATES: dict[RunStatus, TaskState] = {
    RunStatus.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    RunStatus.RUNNING: TaskState.TASK_STATE_WORKING,
    RunStatus.OK: TaskState.TASK_STATE_COMPLETED,
    RunStatus.ERROR: TaskState.TASK_STATE_FAILED,
    RunStatus.TIMEOUT: TaskState.TASK_STATE_FAILED,
    RunStatus.ABORTED: TaskState.TASK_STATE_CANCELED,
}


def session_key(agent_id: str, context_id: str) -> str:
    return f"agent:{agent_id}:{CONTEXT_KIND}:{context_id.lower()}"


def context_of(session_key: str) -> str | None:
    """The context id of an A2A session's key; None for any other session."""
    parts = session_key.split(":", 3)
    return parts[3] if len(parts) == 4 and parts[0] == "agent" and parts[2] == CONTEXT_KIND else None


def text_message(role: Role, text: str, run: Run, message_id: str) -> Message:
    return Message(
        message_id=message_id,
        context_id=context_of(run.session_key) or "",
        task_id=run.run_id,
        role=role,
        parts=[Part(text=text)],
    )


def task_of(run: Run, asked: str | None, *, history_length: int | None = None) -> Task:
    """The run as a task: its state, the reply as artifact and final message (an error's text when it
    failed), the conversation (the user message, the agent's) as history."""
    reply = scrub(run.reply)
    said = reply if run.status is RunStatus.OK else scrub(run.error) or reply
    status = TaskStatus(state=STATES[run.status], timestamp=_timestamp(_changed_at(run)))
    final = (
        text_message(Role.ROLE_AGENT, said or "", run, f"{run.run_id}-reply") if run.status.terminal else None
    )
    if final is not None:
        status.message.CopyFrom(final)
    history = [text_message(Role.ROLE_USER, scrub(asked) or "", run, f"{run.run_id}-input")] if asked else []
    if final is not None:
        history.append(final)
    if history_length is not None:
        history = history[len(history) - history_length :] if history_length else []
    artifacts = [reply_artifact(reply)] if reply else []
    return Task(
        id=run.run_id,
        context_id=context_of(run.session_key) or "",
        status=status,
        artifacts=artifacts,
        history=history,
    )


def reply_artifact(text: str) -> Artifact:
    return Artifact(artifact_id=REPLY_ARTIFACT, name=REPLY_ARTIFACT, parts=[Part(text=text)])


def status_event(run: Run) -> TaskStatusUpdateEvent:
    """The run's state now, as a stream announces it (the final one with the reply or the error)."""
    task = task_of(run, None)
    return TaskStatusUpdateEvent(task_id=run.run_id, context_id=task.context_id, status=task.status)


def text_event(run: Run, text: str, *, append: bool, last: bool = False) -> TaskArtifactUpdateEvent:
    """A piece of the reply as the model writes it: ``append`` to what came before, or (false) the
    reply starting over (its first piece, or a retried model step's)."""
    return TaskArtifactUpdateEvent(
        task_id=run.run_id,
        context_id=context_of(run.session_key) or "",
        artifact=reply_artifact(scrub(text) or ""),
        append=append,
        last_chunk=last,
    )


def _changed_at(run: Run) -> int:
    return run.ended_at or run.started_at or run.created_at


def _timestamp(ms: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp
