"""Standalone chat commands handled by clawbus itself, not by the agent (docs/contract.md §9 and §11):
``/send on|off|inherit``, ``/stop`` and ``/queue <mode>|reset``.

Owners are the senders (``<channel>:<senderId>``) listed in ``commands.ownerAllowFrom``, writing with an
owner token; with no owners configured nobody is one (OpenClaw once let wildcard senders through; not
here). ``/send`` is theirs alone; ``/stop`` and ``/queue`` are also the session's own sender's: whoever a
direct chat session talks with may stop what it is doing for them, and say what their next messages do
while it is busy.
"""

from __future__ import annotations

from shared import run_control, session_keys
from shared.models import QUEUE_MODES, CommandReply, InboundMessageParams, SessionEntry
from shared.sessions import SessionPatch, new_entry
from shared.tools.context import ToolContext

SEND_USAGE = "Usage: /send on|off|inherit"
_SEND_ARGS: dict[str, str | None] = {
    "on": "allow",
    "allow": "allow",
    "off": "deny",
    "deny": "deny",
    "inherit": None,
    "default": None,
    "reset": None,
}


COMMANDS = frozenset({"/send", "/stop", "/queue"})
QUEUE_USAGE = f"Usage: /queue {'|'.join(QUEUE_MODES)}|reset"


def is_command(text: str) -> bool:
    words = text.strip().split()
    return bool(words) and words[0].lower() in COMMANDS


def is_owner(ctx: ToolContext, inbound: InboundMessageParams) -> bool:
    if not inbound.sender_id:
        return False
    sender = f"{inbound.channel or ''}:{inbound.sender_id}".lower()
    return sender in {owner.lower() for owner in ctx.config.commands.owner_allow_from}


def is_own_sender(ctx: ToolContext, inbound: InboundMessageParams) -> bool:
    """The sender is whom the session talks with: the peer its direct-chat key spells, or the address its
    last inbound message came from, on the same channel."""
    if not inbound.sender_id or not inbound.channel:
        return False
    key = ctx.caller_key
    if session_keys.chat_type(key) == "direct" and session_keys.channel_of(key) == inbound.channel:
        return session_keys.peer_of(key) == inbound.sender_id
    entry = ctx.store.sessions.get(key)
    return entry is not None and entry.last_channel == inbound.channel and entry.last_to == inbound.sender_id


def run_command(ctx: ToolContext, inbound: InboundMessageParams) -> CommandReply:
    """``ctx.caller_key`` is the session the command was written in."""
    if inbound.message.strip().split()[0].lower() == "/stop":
        return _stop(ctx, inbound)
    if inbound.message.strip().split()[0].lower() == "/queue":
        return _queue(ctx, inbound)
    display = ctx.display(ctx.caller_key)
    if not ctx.owner:
        return CommandReply(
            command="/send",
            status="error",
            session_key=display,
            error="/send is owner-only (this API token is not an owner)",
        )
    if not is_owner(ctx, inbound):
        return CommandReply(
            command="/send",
            status="error",
            session_key=display,
            error="/send is owner-only (commands.ownerAllowFrom)",
        )
    words = inbound.message.strip().split()
    if len(words) != 2 or words[1].lower() not in _SEND_ARGS:
        return CommandReply(command="/send", status="ok", session_key=display, reply=SEND_USAGE)
    policy = _SEND_ARGS[words[1].lower()]
    entry = _session(ctx)
    ctx.store.sessions.patch(entry, SessionPatch({"sendPolicy": policy}))
    reply = (
        f"Send policy for this session: {policy}."
        if policy
        else "Send policy for this session: inherit (follows session.sendPolicy)."
    )
    return CommandReply(command="/send", status="ok", session_key=display, reply=reply)


def _stop(ctx: ToolContext, inbound: InboundMessageParams) -> CommandReply:
    display = ctx.display(ctx.caller_key)
    if not ((ctx.owner and is_owner(ctx, inbound)) or is_own_sender(ctx, inbound)):
        return CommandReply(
            command="stop",
            status="error",
            session_key=display,
            error="/stop is for owners (commands.ownerAllowFrom) and the session's own sender",
        )
    stopped = run_control.stop_session(ctx.config, ctx.store, ctx.dispatcher, ctx.caller_key)
    # ... and everything the session spawned, down to the last grandchild.
    children = ctx.store.sessions.children(ctx.caller_key)
    killed = run_control.kill_tree(ctx.config, ctx.store, ctx.dispatcher, children)
    return CommandReply(
        command="stop", status="ok", session_key=display, aborted=stopped, killed=killed or None
    )


def _queue(ctx: ToolContext, inbound: InboundMessageParams) -> CommandReply:
    """``/queue <mode>`` sets what the session's next messages do while it is busy; ``reset`` goes back to
    the configuration's (``messages.queue``)."""
    display = ctx.display(ctx.caller_key)
    if not ((ctx.owner and is_owner(ctx, inbound)) or is_own_sender(ctx, inbound)):
        return CommandReply(
            command="/queue",
            status="error",
            session_key=display,
            error="/queue is for owners (commands.ownerAllowFrom) and the session's own sender",
        )
    words = inbound.message.strip().split()
    choice = words[1].lower() if len(words) == 2 else ""
    if choice not in (*QUEUE_MODES, "reset"):
        return CommandReply(command="/queue", status="ok", session_key=display, reply=QUEUE_USAGE)
    mode = None if choice == "reset" else choice
    ctx.store.sessions.patch(_session(ctx), SessionPatch({"queueMode": mode}))
    said = f"Queue mode: {mode}" if mode else "Queue mode: the configuration's (messages.queue)"
    return CommandReply(command="/queue", status="ok", session_key=display, reply=said)


def _session(ctx: ToolContext) -> SessionEntry:
    entry = ctx.store.sessions.get(ctx.caller_key)
    if entry is None:
        ctx.store.sessions.create(new_entry(ctx.config, ctx.caller_key, ctx.store.clock.now_ms()))
        entry = ctx.store.sessions.get(ctx.caller_key)
    assert entry is not None
    return entry
