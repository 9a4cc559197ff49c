"""What a flow needs next, as a pure function of what exists (``next_action``), and which task does it.

A flow is a ``sessions_send`` exchange (primary run, reply-back turns, announce, delivery: docs/contract.md
section 4) or a ``sessions_spawn`` report (child run, its report, the requester's relay, delivery:
section 6). It is not a program counter: the decision looks at the flow and its runs, so any task, or the
reaper, may ask it at any time, and asking twice gives the same answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.ports.runtime import REPLY_SKIP
from clawbus.shared.wire.models import Flow, FlowEndReason, Run, RunStatus, Snapshot

MAX_TURNS = 5
# A step of the exchange waits at most min(timeoutSeconds or 30, 60) s (docs/contract.md §4).
STEP_CAP_S = 60.0
STEP_DEFAULT_S = 30.0


def step_timeout_ms(timeout_seconds: float) -> int:
    return int(min(timeout_seconds or STEP_DEFAULT_S, STEP_CAP_S) * 1000)


@dataclass(frozen=True, slots=True)
class StartTurn:
    turn: int
    input: str
    previous_run_id: str


@dataclass(frozen=True, slots=True)
class StartAnnounce:
    round_one: str
    latest: str
    stop_reason: str


@dataclass(frozen=True, slots=True)
class StartDelivery:
    text: str


@dataclass(frozen=True, slots=True)
class SettleQuietly:
    """A fire-and-forget child (``expectsCompletionMessage: false``) ended: no report; its
    session says how it ended, its flow ends with its delivery not required, and it is cleaned up."""


@dataclass(frozen=True, slots=True)
class StartSubagentDelivery:
    """The child ended (and its own children reported to it): its latest reply is its result, handed to
    its requester with no model step on the child, as the release reads it (docs/contract.md §6)."""


@dataclass(frozen=True, slots=True)
class DeliverRelay:
    """The requester's turn on its child's report ended: post what it said (its reply, else the report
    itself when the turn failed: a completion is never lost), unless it chose silence."""

    reply: str | None
    degraded: str | None = None


@dataclass(frozen=True, slots=True)
class Deliver:
    delivery_id: str


@dataclass(frozen=True, slots=True)
class Wait:
    """A step's run has not ended yet (its commit advances the flow). ``until`` (ms): when a bound passes
    if it has not ended by then, for the reaper to look again."""

    until: int | None = None


@dataclass(frozen=True, slots=True)
class Finish:
    """The flow is over: ``completed`` on the normal path, else what cut it short, and what happened."""

    reason: FlowEndReason = "completed"
    error: str | None = None


Action = (
    StartTurn
    | StartAnnounce
    | StartDelivery
    | SettleQuietly
    | StartSubagentDelivery
    | DeliverRelay
    | Deliver
    | Wait
    | Finish
)


# The one routing table of a flow: which task performs which action. A task that finds an action it does
# not perform hands it to the task that does (the run task and the reaper perform none).
PERFORMS: dict[StepTask, tuple[type[Action], ...]] = {
    StepTask.REPLY_TURN: (StartTurn,),
    StepTask.ANNOUNCE: (StartAnnounce,),
    StepTask.DELIVER: (StartDelivery, StartSubagentDelivery, SettleQuietly, DeliverRelay, Deliver),
}


# What a run task does itself once its run ended: start the flow's next run (which then executes in the
# same task when its session is free), and create the delivery, saving the queue hop to a step task. The
# delivery's attempt is made there too when it stays inside clawbus (``channels.is_local``); one to an
# outside channel goes to the delivery task, whose backoff retries wait on the delivery queue.
RUN_FOLLOWS: tuple[type[Action], ...] = (
    StartTurn,
    StartAnnounce,
    *PERFORMS[StepTask.DELIVER],
)


def task_for(action: Action) -> StepTask | None:
    """The task that performs ``action``; None for the two that need no task (Wait, Finish)."""
    return next((task for task, kinds in PERFORMS.items() if isinstance(action, kinds)), None)


def next_action(snap: Snapshot, now_ms: int) -> Action:
    """What the flow needs next, from what exists. A step's bound counts from when its run started: a run
    still queued (behind a backlog, or its session's earlier runs) is waited for, up to the flow's bound."""
    if snap.flow.status == "done":
        return Finish()
    if snap.flow.kind == "spawn":
        return _next_for_spawn(snap, now_ms)
    action = _next_for_send(snap, now_ms)
    flow = snap.flow
    if isinstance(action, Wait | StartTurn | StartAnnounce) and now_ms > _send_deadline(flow):
        limit = flow.flow_timeout_ms / 1000
        return Finish(
            "flow_timeout",
            f"the flow did not end within {limit:g}s (session.agentToAgent.flowTimeoutSeconds)",
        )
    return action


def _next_for_send(snap: Snapshot, now_ms: int) -> Action:
    flow = snap.flow
    deadline = _send_deadline(flow)
    primary = snap.primary
    if primary is None:
        return Finish("gone", "the primary run is gone")
    unfinished = _unfinished_step(primary, "primary", flow, now_ms, deadline)
    if unfinished is not None:
        return unfinished
    round_one = primary.reply or ""
    if not round_one.strip():
        return Finish("no_reply", "the target gave no reply: there is nothing to announce")
    latest, previous_run = round_one, primary.run_id
    stop_reason = flow.loop_skipped or "max turns"
    for turn, run in enumerate(snap.turns[: flow.max_turns], start=1):
        if flow.blocked_turn == turn:
            stop_reason = "send blocked by session policy"
            break
        if run is None:
            return StartTurn(turn, latest, previous_run)
        # A turn that fails or overruns its bound ends the loop, not the flow: the announce still comes.
        if not run.status.terminal:
            if _overran(run, flow, now_ms):
                stop_reason = f"reply turn {turn} {_overran_text(flow)}"
                break
            return _wait_for(run, flow, deadline)
        if run.status is not RunStatus.OK:
            stop_reason = f"reply turn {turn} ended with status {run.status.value}"
            break
        reply = (run.reply or "").strip()
        if not reply:
            stop_reason = "empty reply"
            break
        if reply == REPLY_SKIP:
            stop_reason = "REPLY_SKIP"
            break
        latest, previous_run = run.reply or "", run.run_id
    announce = snap.announce
    if announce is None:
        if flow.delivery_status == "blocked":
            return Finish()
        return StartAnnounce(round_one, latest, stop_reason)
    unfinished = _unfinished_step(announce, "announce", flow, now_ms, deadline)
    if unfinished is not None:
        return unfinished
    delivery = snap.delivery
    if delivery is None:
        return StartDelivery(announce.reply or "")
    if delivery.status == "pending":
        return Deliver(delivery.delivery_id)
    return Finish()


def _next_for_spawn(snap: Snapshot, now_ms: int) -> Action:
    """Child run (bounded by its own runTimeoutSeconds, not by the step bound), its report, the
    requester's relay, delivery. Every child that ended reports exactly once."""
    flow = snap.flow
    if snap.primary is None:
        return Finish("gone", "the sub-agent run is gone")
    # An orchestrator's latest run (on its children's reports) is the one that counts; one the flow was
    # told of before it was accepted is waited for.
    if flow.last_run_id and snap.latest is None:
        return Wait()
    child = snap.latest or snap.primary
    if not child.status.terminal:
        return Wait()
    deadline = (child.ended_at or child.created_at) + flow.flow_timeout_ms
    if not flow.expects_completion_message:
        return _settle_quietly(snap, now_ms, deadline)
    if snap.relay is not None and snap.delivery is None and flow.delivery_status is None:
        return _after_relay(snap.relay, flow, now_ms, deadline)
    if snap.delivery is None and flow.delivery_status is None:
        # Not done while a child it spawned is still to report (its report starts the orchestrator's next
        # run); a killed orchestrator waits for none, and none waits past the flow's bound.
        if snap.children_pending and not snap.child_killed and now_ms <= deadline:
            return Wait(deadline + 1)
        return StartSubagentDelivery()
    if snap.delivery is not None and snap.delivery.status == "pending":
        return Deliver(snap.delivery.delivery_id)
    return Finish()


def _settle_quietly(snap: Snapshot, now_ms: int, deadline: int) -> Action:
    """A fire-and-forget child owes no report, but an orchestrator's own children still report to it: it
    settles once they have (a killed one waits for none), or the flow's bound has passed."""
    if snap.children_pending and not snap.child_killed and now_ms <= deadline:
        return Wait(deadline + 1)
    return SettleQuietly()


def _after_relay(relay: Run, flow: Flow, now_ms: int, deadline: int) -> Action:
    """A top-level requester relays its child's report in its own words (its turn may not outlast the
    step's bound, nor the flow's): what it said is posted; a failed or overrunning turn posts the report."""
    if relay.status is RunStatus.OK:
        return DeliverRelay(relay.reply or "")
    if relay.status.terminal:
        return DeliverRelay(None, f"the requester's relay ended with status {relay.status.value}")
    if _overran(relay, flow, now_ms):
        return DeliverRelay(None, f"the requester's relay {_overran_text(flow)}")
    if now_ms > deadline:
        return DeliverRelay(None, "the requester's relay had not ended within the flow's bound")
    return _wait_for(relay, flow, deadline)


def _unfinished_step(
    run: Run, step: Literal["primary", "announce"], flow: Flow, now_ms: int, deadline: int
) -> Wait | Finish | None:
    """What an exchange's primary or announce run that has not ended ``ok`` means for the flow: wait for
    it, or end the flow (it overran its bound, or it failed); None when it ended ``ok``."""
    if not run.status.terminal:
        if _overran(run, flow, now_ms):
            return Finish("step_timeout", f"the {step} run {_overran_text(flow)}")
        return _wait_for(run, flow, deadline)
    if run.status is not RunStatus.OK:
        reason: FlowEndReason = "primary_failed" if step == "primary" else "announce_failed"
        return Finish(reason, f"the {step} run ended with status {run.status.value}")
    return None


def _send_deadline(flow: Flow) -> int:
    return flow.created_at + flow.flow_timeout_ms


def _overran(run: Run, flow: Flow, now_ms: int) -> bool:
    """A step's clock runs from its run's start: time queued never counts."""
    return run.started_at is not None and now_ms > run.started_at + flow.step_timeout_ms


def _overran_text(flow: Flow) -> str:
    return f"did not end within {flow.step_timeout_ms / 1000:g}s of starting"


def _wait_for(run: Run, flow: Flow, deadline: int) -> Wait:
    """Wait for ``run``; the reaper looks again when its step bound (if it started) or the flow's passes."""
    bound = deadline if run.started_at is None else min(run.started_at + flow.step_timeout_ms, deadline)
    return Wait(bound + 1)
