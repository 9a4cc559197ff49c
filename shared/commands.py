"""Standalone chat commands handled by clawbus itself, not by the agent: ``/send on|off|inherit``.

Owner-only: the sender (``<channel>:<senderId>``) must be listed in ``commands.ownerAllowFrom``. With no
owners configured nobody may run them (OpenClaw once let wildcard senders through; not here).
"""

from __future__ import annotations

from shared.models import CommandReply, InboundMessageParams, SessionEntry
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


def is_command(text: str) -> bool:
    words = text.strip().split()
    return bool(words) and words[0].lower() == "/send"


def is_owner(ctx: ToolContext, inbound: InboundMessageParams) -> bool:
    if not inbound.sender_id:
        return False
    sender = f"{inbound.channel or ''}:{inbound.sender_id}".lower()
    return sender in {owner.lower() for owner in ctx.config.commands.owner_allow_from}


def run_command(ctx: ToolContext, inbound: InboundMessageParams) -> CommandReply:
    """``ctx.caller_key`` is the session the command was written in."""
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


def _session(ctx: ToolContext) -> SessionEntry:
    entry = ctx.store.sessions.get(ctx.caller_key)
    if entry is None:
        ctx.store.sessions.create(new_entry(ctx.config, ctx.caller_key, ctx.store.clock.now_ms()))
        entry = ctx.store.sessions.get(ctx.caller_key)
    assert entry is not None
    return entry
