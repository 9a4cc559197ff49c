"""``/send on|off|inherit``: the session's send policy (docs/contract.md §5); owners only, as in the
release."""

from __future__ import annotations

from clawbus.shared.commands.base import Call, Outcome, is_owner
from clawbus.shared.domain.sessions import SessionPatch

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


def send(call: Call) -> Outcome:
    if not call.ctx.owner:
        return call.failed("/send is owner-only (this API token is not an owner)")
    if not is_owner(call.ctx, call.inbound):
        return call.failed("/send is owner-only (commands.ownerAllowFrom)")
    args = call.invocation.args
    if len(args) != 1 or args[0].lower() not in _SEND_ARGS:
        return call.said(SEND_USAGE)
    policy = _SEND_ARGS[args[0].lower()]
    call.ctx.store.sessions.patch(call.session(), SessionPatch({"sendPolicy": policy}))
    return call.said(
        f"Send policy for this session: {policy}."
        if policy
        else "Send policy for this session: inherit (follows session.sendPolicy)."
    )
