"""What every chat command shares: how the message is read as one (the release's normalization), who may
run it, and the two ways it is answered.

A command is a message whose first word is ``/<name>``, in any case, optionally followed by ``:``
(``/queue: steer`` is ``/queue steer``), as OpenClaw 2026.9.6 normalizes a command body. Its arguments
keep their case.

Owners are the senders (``<channel>:<senderId>``) listed in ``commands.ownerAllowFrom``, writing with an
owner token; with no owners configured nobody is one. Beside them, the session's own sender may run every
command but ``/send``: whoever a direct chat session talks with may stop it, steer it, look at what it
spawned and say what their next messages do while it is busy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from clawbus.shared.base import session_keys
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.flows.queueing import QueueOptions
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import CommandReply, InboundMessageParams, QueueMode, SessionEntry

_INVOCATION = re.compile(r"\s*/(?P<name>[^\s:]+)(?:\s*:)?(?P<rest>.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Invocation:
    """``/<name> <rest>``: the name lowercased, the rest as written (leading space dropped)."""

    name: str
    rest: str

    @property
    def args(self) -> list[str]:
        return self.rest.split()


def parse(text: str) -> Invocation | None:
    found = _INVOCATION.fullmatch(text)
    if found is None:
        return None
    return Invocation(f"/{found['name'].lower()}", found["rest"].strip())


@dataclass(frozen=True, slots=True)
class Call:
    """One command as it arrived. ``ctx.caller_key`` is the session it acts on (a thread bound to a
    sub-agent hands its messages to the sub-agent); ``addressed`` is the key the message was sent to (the
    thread's own), which ``/session`` reads the binding of."""

    ctx: ToolContext
    inbound: InboundMessageParams
    addressed: str
    invocation: Invocation

    @property
    def display(self) -> str:
        return self.ctx.display(self.ctx.caller_key)

    def said(self, text: str, command: str | None = None) -> CommandReply:
        """The command did what it was asked (or was asked for its usage): the release's words."""
        return CommandReply(
            command=command or self.invocation.name, status="ok", session_key=self.display, reply=text
        )

    def failed(self, text: str, command: str | None = None) -> CommandReply:
        """The command did nothing: a target not found, a value it does not take."""
        return CommandReply(
            command=command or self.invocation.name, status="error", session_key=self.display, error=text
        )

    def session(self) -> SessionEntry:
        """The session's entry, created if it is not yet (a command may be its first message)."""
        store = self.ctx.store
        entry = store.sessions.get(self.ctx.caller_key)
        if entry is None:
            store.sessions.create(new_entry(self.ctx.config, self.ctx.caller_key, store.clock.now_ms()))
            entry = store.sessions.get(self.ctx.caller_key)
        assert entry is not None
        return entry


@dataclass(frozen=True, slots=True)
class Forward:
    """The command's message goes on as a message to the session, as the release goes on with a
    command's text (``/steer <message>``; a ``/queue`` directive followed by text, which applies to that
    message only)."""

    message: str
    queue_mode: QueueMode | None = None
    options: QueueOptions = field(default_factory=QueueOptions)


Outcome = CommandReply | Forward


def is_owner(ctx: ToolContext, inbound: InboundMessageParams) -> bool:
    if not inbound.sender_id:
        return False
    sender = f"{inbound.channel or ''}:{inbound.sender_id}".lower()
    return sender in {owner.lower() for owner in ctx.config.commands.owner_allow_from}


def is_own_sender(ctx: ToolContext, inbound: InboundMessageParams, session_key: str) -> bool:
    """The sender is whom the session talks with: the peer its direct-chat key spells, or the address its
    last inbound message came from, on the same channel."""
    if not inbound.sender_id or not inbound.channel:
        return False
    if (
        session_keys.chat_type(session_key) == "direct"
        and session_keys.channel_of(session_key) == inbound.channel
    ):
        return session_keys.peer_of(session_key) == inbound.sender_id
    entry = ctx.store.sessions.get(session_key)
    return entry is not None and entry.last_channel == inbound.channel and entry.last_to == inbound.sender_id


def allowed(call: Call) -> bool:
    """An owner, or the own sender of the session the command acts on or of the one it was sent to."""
    ctx, inbound = call.ctx, call.inbound
    if ctx.owner and is_owner(ctx, inbound):
        return True
    return any(is_own_sender(ctx, inbound, key) for key in {ctx.caller_key, call.addressed})


def refusal(call: Call, command: str) -> CommandReply:
    """clawbus's answer to anyone else (the release ignores a text command from a sender it does not
    authorize, and treats a directive of theirs as plain text: clawbus says why it did nothing)."""
    return call.failed(
        f"{command} is for owners (commands.ownerAllowFrom) and the session's own sender", command
    )
