"""sessions_send's ``mode`` (docs/contract.md §4) beside a turn of its own (``followup``): ``steer`` the
message into the target's running run, or ``notify`` it as context for the target's next turn; and the
targets a send may not have (a thread's session), as OpenClaw 2026.9.6's tool decides them.

Neither mode starts an exchange: the release leaves a steered message's completion with the run that takes
it in, and a notification starts no turn at all, so there are no reply-back turns, no announce and no flow.
"""

from __future__ import annotations

from dataclasses import dataclass

from clawbus.shared.domain import chains
from clawbus.shared.domain.chains import Chain
from clawbus.shared.domain.runs import WhenBusy, new_run
from clawbus.shared.intake.submit import submit
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.models import Provenance, SessionEntry, ToolFailure
from clawbus.shared.wire.send_schema import AnnounceDelivery, NotifyResult, SendResult, SessionsSendParams

# The release's texts (sessions-send-tool.ts).
THREAD_REFUSED = (
    "sessions_send cannot target a thread session for inter-agent coordination. Use the parent channel "
    "session key instead."
)
MISSING_REFUSED = "Cannot notify, steer, or resume a missing session. Use mode=followup to start a new turn."
NOT_STEERED = "Target has no active run that accepts steering. Use mode=followup to start a new turn."

# The modes that reach a session as it is, and so need it to exist (a send may otherwise reach an agent's
# main session before its first message).
ON_EXISTING = ("steer", "notify")


def waits(params: SessionsSendParams) -> int:
    """The seconds the send waits: a steer none, whatever it asked, as the release answers a steer on its
    admission (the run that takes it in owns the reply). A send that waits may not target its caller."""
    return 0 if params.mode == "steer" else params.wait_seconds


def thread_refusal(run_id: str, named: str) -> ToolFailure:
    """A thread's session is a person's conversation: agents coordinate through its parent channel's
    session, so tool-routed messages never appear inside a thread people are in."""
    return ToolFailure(status="error", error=THREAD_REFUSED, run_id=run_id, session_key=named)


def missing_refusal(run_id: str, shown: str) -> ToolFailure:
    return ToolFailure(status="error", error=MISSING_REFUSED, run_id=run_id, session_key=shown)


@dataclass(frozen=True, slots=True)
class Sent:
    """What the send has settled before its mode takes over."""

    run_id: str
    now: int
    chain: Chain
    caller_channel: str | None
    shown: str  # the target as the result names it


def deliver(
    ctx: ToolContext, params: SessionsSendParams, target: SessionEntry, sent: Sent
) -> SendResult | NotifyResult | ToolFailure:
    """``steer`` or ``notify`` the message into ``target``; its message names the caller as any send's."""
    source = Provenance(
        kind="inter_session",
        source_session_key=ctx.caller_key,
        source_channel=sent.caller_channel,
        source_tool="sessions_send",
        source_run_id=ctx.origin_run_id,
    )
    if params.mode == "notify":
        return notify(ctx, target, params.message, source, sent)
    return steer(ctx, target, params.message, source, sent)


def steer(
    ctx: ToolContext, target: SessionEntry, message: str, source: Provenance, sent: Sent
) -> SendResult | ToolFailure:
    """A ``steer`` run behind the target's running run, which takes it in before its next model step (the
    machinery of a person's steer, docs/contract.md §11). The accept refuses it, atomically, when the
    target runs nothing that takes steers (idle, a run not started yet, an agent-to-agent run); a run that
    ends before another step leaves it to run as a run of its own, so the message is never lost."""
    new = new_run(
        target,
        "steer",
        message,
        run_id=sent.run_id,
        now=sent.now,
        provenance=source,
        parent_run_id=source.source_run_id,
        **chains.fields(sent.chain),
    )
    window = ctx.chain_window()
    accepted = submit(
        ctx.store.runs, ctx.dispatcher, target, {}, new, when_busy=WhenBusy.steer(), window=window
    )
    if accepted.chain_full and window is not None:
        return chains.refusal(chains.over_window(sent.chain, window), sent.run_id)
    if accepted.not_steered:
        # The release names the stored key here, not the alias the caller used.
        return ToolFailure(status="error", error=NOT_STEERED, run_id=sent.run_id, session_key=target.key)
    return SendResult(
        run_id=sent.run_id,
        status="accepted",
        session_key=sent.shown,
        target_disposition="steered",
        # Nothing is announced: the reply belongs to the run that took the message in.
        delivery=AnnounceDelivery(status="skipped"),
    )


def notify(
    ctx: ToolContext, target: SessionEntry, message: str, source: Provenance, sent: Sent
) -> NotifyResult:
    """A ``note`` run: the message is recorded in the target's transcript in its turn (after whatever its
    lane holds), with no agent step, so the target's next turn reads it as context and none is started for
    it. The release queues a system event its next turn takes in; the effect on that turn is the same,
    and the note, an accepted run, survives a restart."""
    new = new_run(target, "note", message, run_id=sent.run_id, now=sent.now, provenance=source)
    submit(ctx.store.runs, ctx.dispatcher, target, {}, new)
    return NotifyResult(session_key=sent.shown, notification_id=sent.run_id)
