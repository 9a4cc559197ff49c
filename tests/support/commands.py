"""Chat commands in unit tests: messages written in a session by its own sender, or by someone else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clawbus.shared.commands.inbound import receive
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import CommandReply, InboundMessageParams
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World

# A Telegram direct chat with "7": "7" writing on telegram is the session's own sender.
KEY = "agent:main:telegram:direct:7"
PEER = "7"


@dataclass
class Chat:
    """A session of a world, and the messages written in it."""

    world: World
    key: str = KEY

    def ctx(self) -> ToolContext:
        return self.world.context(self.key)

    def say(
        self, text: str, sender: str | None = PEER, channel: str | None = "telegram", **fields: Any
    ) -> Any:
        params = {"message": text, "timeoutSeconds": 0, **fields}
        if sender is not None:
            params["senderId"] = sender
        if channel is not None:
            params["channel"] = channel
        return receive(self.ctx(), InboundMessageParams.model_validate(params))

    def command(self, text: str, **fields: Any) -> CommandReply:
        answer = self.say(text, **fields)
        assert isinstance(answer, CommandReply), answer
        return answer

    def text(self, command: str, **fields: Any) -> str:
        """What the command answered: its reply, or what it refused."""
        answer = self.command(command, **fields)
        return answer.reply or answer.error or ""

    def message(self, text: str, **fields: Any) -> SendResult:
        answer = self.say(text, **fields)
        assert isinstance(answer, SendResult), answer
        return answer

    def spawn(self, task: str = "Say hi and stop.", **args: Any) -> SpawnResult:
        spawned = TOOLS["sessions_spawn"].invoke(self.ctx(), {"task": task, **args})
        assert isinstance(spawned, SpawnResult), spawned
        return spawned

    def start(self, child: SpawnResult) -> None:
        """The child's run taken by a worker that holds it a minute: it runs from now on; once the clock is
        past that minute, a drain finishes it (the worker lost, another takes the run over)."""
        self.world.store.runs.claim(
            child.run_id, child.child_session_key, owner="t", attempt=0, lease_ms=60_000, max_attempts=3
        )


def greeted_chat(config: dict[str, Any]) -> Chat:
    """A chat on a world of ``config`` whose session exists: one message sent and answered."""
    from clawbus.workers.testing import world

    chat = Chat(world(config))
    chat.message("hello")
    chat.world.drain()
    return chat
