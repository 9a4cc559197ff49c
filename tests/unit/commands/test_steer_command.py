"""shared/commands/steer.py: `/steer <message>` and `/tell <message>` put the message into the session's
running run, whatever its queue mode; with nothing running it runs as a run of its own, as the release's
normal prompt. (The running run taking it in at its next model step: tests/integration/test_chat_commands.py.)"""

from __future__ import annotations

import pytest

from clawbus.shared.wire.models import RunStatus
from clawbus.workers.testing import world
from tests.support.commands import KEY, Chat


@pytest.fixture
def chat() -> Chat:
    return Chat(world())


def lane(chat: Chat) -> list[tuple[str, str]]:
    store = chat.world.store
    runs = [store.runs.get(run_id) for run_id in store.runs.lane(KEY)]
    inputs = store.runs.inputs([run.run_id for run in runs if run])
    return [
        (run.kind, message.text if message else "") for run, message in zip(runs, inputs, strict=True) if run
    ]


@pytest.mark.parametrize("command", ["/steer", "/tell", "/STEER   ", "/steer:"])
def test_without_a_message_it_answers_its_usage_and_sends_nothing(chat: Chat, command: str) -> None:
    answer = chat.command(command)
    assert (answer.command, answer.status, answer.reply) == ("/steer", "ok", "Usage: /steer <message>")
    assert chat.world.dispatcher.heads == []


@pytest.mark.parametrize("command", ["/steer be brief", "/tell be brief", "/TELL: be brief"])
def test_the_message_goes_to_the_busy_session_as_a_steer_whatever_its_queue_mode(
    chat: Chat, command: str
) -> None:
    chat.text("/queue reject")  # a plain message would be refused now
    first = chat.message("first", queueMode="followup")
    steered = chat.message(command)
    assert steered.status == "accepted"
    assert lane(chat) == [("chat", "first"), ("steer", "be brief")]
    assert steered.run_id != first.run_id


def test_its_lines_are_kept(chat: Chat) -> None:
    chat.message("first")
    chat.message("/steer one\ntwo")
    assert lane(chat)[-1] == ("steer", "one\ntwo")


def test_with_nothing_running_it_runs_as_a_run_of_its_own(chat: Chat) -> None:
    steered = chat.message("/steer hello there")
    chat.world.drain()
    run = chat.world.store.runs.get(steered.run_id)
    assert run is not None
    assert (run.status, run.reply) == (RunStatus.OK, "echo: hello there")
    said = [(m.role, m.text) for m in chat.world.store.transcripts.all(KEY)]
    assert said == [("user", "hello there"), ("assistant", "echo: hello there")]
