"""Standalone chat commands, answered by clawbus without a run (docs/contract.md §8-§11): a message that is
one of them never reaches the model, but for ``/steer`` (and a ``/queue`` directive followed by text),
whose message goes on to the session.

| command | does |
|---|---|
| ``/send on|off|inherit`` | the session's send policy (owners only) |
| ``/stop`` | the session's runs stopped, its sub-agents killed |
| ``/queue [<mode>] [debounce:] [cap:] [drop:]``, ``/queue default`` | the session's queue settings |
| ``/steer <message>``, ``/tell <message>`` | the message into the running run |
| ``/status`` | the session's status card |
| ``/subagents list|log|info|kill``, ``/agents`` | the session's sub-agents |
| ``/session idle|max-age|unbind`` | the thread binding of the conversation |

Every command but ``/send`` is for owners and the session's own sender (``shared.commands.base``).
"""

from __future__ import annotations

from collections.abc import Callable

from clawbus.shared.commands.base import Call, Forward, Outcome, allowed, parse, refusal
from clawbus.shared.commands.policy import send
from clawbus.shared.commands.queue import queue
from clawbus.shared.commands.session import session
from clawbus.shared.commands.status import status
from clawbus.shared.commands.steer import steer
from clawbus.shared.commands.stop import stop
from clawbus.shared.commands.subagents import agents, subagents
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import CommandReply, InboundMessageParams

__all__ = ["Forward", "Outcome", "is_command", "run_command"]

Handler = Callable[[Call], Outcome]
# Each command by its name and aliases, with the name its refusal says.
_HANDLERS: dict[str, tuple[str, Handler]] = {
    "/send": ("/send", send),
    "/stop": ("/stop", stop),
    "/queue": ("/queue", queue),
    "/steer": ("/steer", steer),
    "/tell": ("/steer", steer),
    "/status": ("/status", status),
    "/subagents": ("/subagents", subagents),
    "/agents": ("/agents", agents),
    "/session": ("/session", session),
}


def is_command(text: str) -> bool:
    invocation = parse(text)
    return invocation is not None and invocation.name in _HANDLERS


def run_command(ctx: ToolContext, inbound: InboundMessageParams, addressed: str) -> Outcome:
    """``ctx.caller_key`` is the session the command acts on; ``addressed``, the key the message was sent
    to (they differ in a thread bound to a sub-agent)."""
    invocation = parse(inbound.message)
    assert invocation is not None, "is_command said it is one"
    label, handler = _HANDLERS[invocation.name]
    call = Call(ctx, inbound, addressed, invocation)
    # /send checks its owners itself: it is theirs alone.
    if label != "/send" and not allowed(call):
        return _refused(call, label)
    return handler(call)


def _refused(call: Call, label: str) -> CommandReply:
    reply = refusal(call, label)
    # /stop's answer has always been named ``stop``.
    return reply.model_copy(update={"command": "stop"}) if label == "/stop" else reply
