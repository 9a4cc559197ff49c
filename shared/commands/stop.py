"""``/stop``: the session's running run aborted, its queued runs dropped, and everything it spawned killed
(docs/contract.md §8)."""

from __future__ import annotations

from clawbus.shared.commands.base import Call, Outcome
from clawbus.shared.flows import run_control
from clawbus.shared.wire.models import CommandReply


def stop(call: Call) -> Outcome:
    ctx = call.ctx
    stopped = run_control.stop_session(ctx, ctx.caller_key)
    # ... and everything the session spawned, down to the last grandchild.
    children = ctx.store.sessions.children(ctx.caller_key)
    killed = run_control.kill_tree(ctx, children)
    return CommandReply(
        command="stop", status="ok", session_key=call.display, aborted=stopped, killed=killed or None
    )
