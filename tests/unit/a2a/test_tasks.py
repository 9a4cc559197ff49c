"""shared/a2a/tasks.py: a clawbus run seen as an A2A task, its context's session, and its stream events."""

from __future__ import annotations

import pytest
from a2a.types import Artifact, Message, Role, TaskState

from clawbus.shared.a2a.tasks import (
    CONTEXT_ID,
    REPLY_ARTIFACT,
    STATES,
    context_of,
    session_key,
    status_event,
    task_of,
    text_event,
)
from clawbus.shared.wire.models import Run, RunStatus
from tests.support.runs import a_run

CONTEXT = "ctx-1"
KEY = f"agent:main:a2a:{CONTEXT}"
CREATED, STARTED, ENDED = 1_700_000_000_000, 1_700_000_001_000, 1_700_000_002_000


def a2a_run(status: RunStatus, **fields: object) -> Run:
    """A run of the A2A context ``ctx-1`` of ``main`` in ``status``, with the times that status has."""
    times: dict[str, object] = {"created_at": CREATED}
    if status is not RunStatus.QUEUED:
        times["started_at"] = STARTED
    if status.terminal:
        times["ended_at"] = ENDED
    return a_run("run-1", status).model_copy(update={"session_key": KEY, **times, **fields})


def texts(holder: Message | Artifact) -> list[str]:
    return [part.text for part in holder.parts]


@pytest.mark.parametrize(
    ("status", "state"),
    [
        (RunStatus.QUEUED, TaskState.TASK_STATE_SUBMITTED),
        (RunStatus.RUNNING, TaskState.TASK_STATE_WORKING),
        (RunStatus.OK, TaskState.TASK_STATE_COMPLETED),
        (RunStatus.ERROR, TaskState.TASK_STATE_FAILED),
        (RunStatus.TIMEOUT, TaskState.TASK_STATE_FAILED),
        (RunStatus.ABORTED, TaskState.TASK_STATE_CANCELED),
    ],
)
def test_every_run_status_is_a_task_state(status: RunStatus, state: TaskState) -> None:
    assert STATES[status] == state
    assert task_of(a2a_run(status), "hi").status.state == state


def test_every_run_status_has_a_task_state() -> None:
    assert set(STATES) == set(RunStatus)


def test_a_task_is_its_run_with_its_context() -> None:
    task = task_of(a2a_run(RunStatus.OK), "hello")
    assert task.id == "run-1"
    assert task.context_id == CONTEXT


def test_a_completed_task_has_the_reply_as_artifact_and_final_message_after_the_question() -> None:
    task = task_of(a2a_run(RunStatus.OK, reply="echo: hello"), "hello")
    assert [(a.artifact_id, a.name, texts(a)) for a in task.artifacts] == [
        (REPLY_ARTIFACT, REPLY_ARTIFACT, ["echo: hello"])
    ]
    assert task.status.message.role == Role.ROLE_AGENT
    assert texts(task.status.message) == ["echo: hello"]
    assert task.status.message.task_id == "run-1"
    assert task.status.message.context_id == CONTEXT
    assert [(m.role, texts(m), m.message_id) for m in task.history] == [
        (Role.ROLE_USER, ["hello"], "run-1-input"),
        (Role.ROLE_AGENT, ["echo: hello"], "run-1-reply"),
    ]


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING])
def test_a_task_in_progress_has_no_final_message_nor_artifact(status: RunStatus) -> None:
    task = task_of(a2a_run(status, reply=None), "hello")
    assert not task.status.HasField("message")
    assert list(task.artifacts) == []
    assert [(m.role, texts(m)) for m in task.history] == [(Role.ROLE_USER, ["hello"])]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (RunStatus.ERROR, "model down"),
        (RunStatus.TIMEOUT, "run timed out after 30s"),
        (RunStatus.ABORTED, "run aborted"),
    ],
)
def test_a_task_that_did_not_complete_says_its_error(status: RunStatus, error: str) -> None:
    task = task_of(a2a_run(status, reply=None, error=error), "hello")
    assert texts(task.status.message) == [error]
    assert texts(task.history[-1]) == [error]
    assert list(task.artifacts) == []


def test_a_failed_task_keeps_the_reply_it_had_written_as_artifact() -> None:
    task = task_of(a2a_run(RunStatus.TIMEOUT, reply="half an answer", error="timed out"), "hello")
    assert texts(task.status.message) == ["timed out"]
    assert [texts(a) for a in task.artifacts] == [["half an answer"]]


def test_a_failed_task_without_an_error_says_its_reply() -> None:
    task = task_of(a2a_run(RunStatus.ERROR, reply="partial", error=None), "hello")
    assert texts(task.status.message) == ["partial"]


def test_a_task_whose_question_is_unknown_has_only_its_answer_as_history() -> None:
    task = task_of(a2a_run(RunStatus.OK), None)
    assert [m.role for m in task.history] == [Role.ROLE_AGENT]


@pytest.mark.parametrize(
    ("length", "roles"),
    [
        (None, [Role.ROLE_USER, Role.ROLE_AGENT]),
        (5, [Role.ROLE_USER, Role.ROLE_AGENT]),
        (2, [Role.ROLE_USER, Role.ROLE_AGENT]),
        (1, [Role.ROLE_AGENT]),
        (0, []),
    ],
)
def test_history_length_keeps_the_latest_messages(length: int | None, roles: list[Role]) -> None:
    task = task_of(a2a_run(RunStatus.OK), "hello", history_length=length)
    assert [m.role for m in task.history] == roles


@pytest.mark.parametrize(
    ("status", "changed_at"),
    [(RunStatus.QUEUED, CREATED), (RunStatus.RUNNING, STARTED), (RunStatus.OK, ENDED)],
)
def test_the_status_timestamp_is_when_the_run_last_changed(status: RunStatus, changed_at: int) -> None:
    assert task_of(a2a_run(status), "hi").status.timestamp.ToMilliseconds() == changed_at


def test_secrets_in_the_question_and_the_reply_are_redacted() -> None:
    secret = "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstu"
    task = task_of(a2a_run(RunStatus.OK, reply=f"it is {secret}"), f"use {secret}")
    shown = [*texts(task.history[0]), *texts(task.history[1]), *texts(task.artifacts[0])]
    assert shown == [
        "use OPENAI_API_KEY=sk-pro…rstu",
        "it is OPENAI_API_KEY=sk-pro…rstu",
        "it is OPENAI_API_KEY=sk-pro…rstu",
    ]
    assert texts(task_of(a2a_run(RunStatus.ERROR, error=secret), None).status.message) == [
        "OPENAI_API_KEY=sk-pro…rstu"
    ]


def test_the_run_of_another_session_is_a_task_with_no_context() -> None:
    task = task_of(a_run("run-2", RunStatus.OK), "hi")
    assert task.context_id == ""
    assert task.status.message.context_id == ""


@pytest.mark.parametrize(
    ("agent", "context", "key"),
    [
        ("main", "ctx-1", "agent:main:a2a:ctx-1"),
        ("research", "Ctx.One_2", "agent:research:a2a:ctx.one_2"),
        (
            "main",
            "F47AC10B-58CC-4372-A567-0E02B2C3D479",
            "agent:main:a2a:f47ac10b-58cc-4372-a567-0e02b2c3d479",
        ),
    ],
)
def test_a_context_is_a_lowercased_session_of_its_agent(agent: str, context: str, key: str) -> None:
    assert session_key(agent, context) == key
    assert context_of(key) == context.lower()


@pytest.mark.parametrize(
    "key",
    [
        "agent:main:main",
        "agent:main:a2a",
        "agent:main:a2a-remote:far",
        "agent:main:discord:group:ops",
        "a2a:ctx-1",
        "session:main:a2a:ctx-1",
    ],
)
def test_any_other_session_has_no_context(key: str) -> None:
    assert context_of(key) is None


@pytest.mark.parametrize("context", ["a", "ctx-1", "A.b_c-9", "x" * 128])
def test_a_context_id_of_letters_digits_dots_underscores_and_dashes_is_accepted(context: str) -> None:
    assert CONTEXT_ID.match(context)


@pytest.mark.parametrize("context", ["", "-ctx", ".ctx", "ctx:1", "ctx 1", "ctx/1", "x" * 129])
def test_a_context_id_that_could_not_name_a_session_is_refused(context: str) -> None:
    assert not CONTEXT_ID.match(context)


def test_a_status_event_of_a_running_run_says_working_without_a_message() -> None:
    event = status_event(a2a_run(RunStatus.RUNNING))
    assert (event.task_id, event.context_id) == ("run-1", CONTEXT)
    assert event.status.state == TaskState.TASK_STATE_WORKING
    assert not event.status.HasField("message")


def test_the_final_status_event_carries_the_reply_or_the_error() -> None:
    done = status_event(a2a_run(RunStatus.OK, reply="echo: hi"))
    failed = status_event(a2a_run(RunStatus.ERROR, reply=None, error="model down"))
    assert (done.status.state, texts(done.status.message)) == (TaskState.TASK_STATE_COMPLETED, ["echo: hi"])
    assert (failed.status.state, texts(failed.status.message)) == (
        TaskState.TASK_STATE_FAILED,
        ["model down"],
    )


@pytest.mark.parametrize(("append", "last"), [(False, False), (True, False), (True, True)])
def test_a_text_event_is_a_piece_of_the_reply_artifact(append: bool, last: bool) -> None:
    event = text_event(a2a_run(RunStatus.RUNNING), "echo", append=append, last=last)
    assert (event.task_id, event.context_id) == ("run-1", CONTEXT)
    assert event.artifact.artifact_id == REPLY_ARTIFACT
    assert texts(event.artifact) == ["echo"]
    assert (event.append, event.last_chunk) == (append, last)


def test_a_text_event_is_redacted_and_an_empty_one_starts_the_reply_over() -> None:
    run = a2a_run(RunStatus.RUNNING)
    assert texts(text_event(run, "token: sk-abcdefghijklmnopqrstuvwxyz1234", append=True).artifact) == [
        "token: sk-abc…1234"
    ]
    reset = text_event(run, "", append=False)
    assert texts(reset.artifact) == [""]
    assert not reset.append
