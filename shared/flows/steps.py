"""The steps that change a flow: creating it, starting its next run or delivery, ending it.

``advance`` asks ``decide.next_action`` what comes next and does it if the calling task performs that action
(``decide.PERFORMS``), else enqueues the task that does. Every step's run, note and delivery has an id derived
from the flow's (``ids``), so a step that runs twice changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shared import archive, channels, deliveries, logs, policy, subagents
from shared.config import Config
from shared.contexts import ANNOUNCE_MESSAGE, announce_context, reply_context
from shared.dispatch import Dispatcher
from shared.flows.decide import (
    PERFORMS,
    RUN_FOLLOWS,
    Action,
    Finish,
    Snapshot,
    StartAnnounce,
    StartDelivery,
    StartSubagentAnnounce,
    StartSubagentDelivery,
    StartTurn,
    StepTask,
    Wait,
    next_action,
    step_timeout_ms,
    task_for,
)
from shared.flows.ids import announce_run_id, delivery_id, note_id, turn_run_id
from shared.flows.view import snapshot
from shared.models import Delivery, Flow, Provenance, RunStatus, SessionEntry
from shared.runs import LaneHead, NewRun, new_run
from shared.runtime.base import ANNOUNCE_SKIP
from shared.sessions import SessionPatch, channel_of, new_entry, route_of, transcript_path
from shared.store import Store
from shared.submit import submit

log = logging.getLogger(__name__)


def new_flow(
    config: Config,
    *,
    run_id: str,
    requester_key: str,
    requester: SessionEntry | None,
    target_key: str,
    target: SessionEntry | None,
    message: str,
    timeout_seconds: float,
    chain_id: str,
    hops: int,
    now: int,
) -> Flow:
    main_key = config.session.main_key
    max_turns = config.session.agent_to_agent.max_ping_pong_turns
    skipped = None
    if requester is None:
        skipped = "no requester session"
    elif requester_key == target_key:
        skipped = "requester is the target"
    elif max_turns == 0:
        skipped = "maxPingPongTurns is 0"
    return Flow(
        flow_id=run_id,
        status="running",
        requester_key=requester_key,
        requester_channel=channel_of(requester, requester_key, main_key),
        target_key=target_key,
        target_channel=channel_of(target, target_key, main_key),
        message=message,
        max_turns=0 if skipped else max_turns,
        step_timeout_ms=step_timeout_ms(timeout_seconds),
        flow_timeout_ms=config.session.agent_to_agent.flow_timeout_seconds * 1000,
        created_at=now,
        updated_at=now,
        chain_id=chain_id,
        hops=hops,
        loop_skipped=skipped,
    )


def new_spawn_flow(
    config: Config,
    *,
    run_id: str,
    requester_key: str,
    requester: SessionEntry | None,
    child: SessionEntry,
    task: str,
    cleanup: Literal["delete", "keep"],
    mode: Literal["run", "session"],
    now: int,
) -> Flow:
    main_key = config.session.main_key
    return Flow(
        flow_id=run_id,
        kind="spawn",
        status="running",
        requester_key=requester_key,
        requester_channel=channel_of(requester, requester_key, main_key),
        target_key=child.key,
        target_channel=channel_of(child, child.key, main_key),
        message=task,
        task=task,
        cleanup=cleanup,
        mode=mode,
        max_turns=0,
        step_timeout_ms=config.agents.defaults.subagents.announce_timeout_seconds * 1000,
        flow_timeout_ms=config.session.agent_to_agent.flow_timeout_seconds * 1000,
        created_at=now,
        updated_at=now,
        chain_id=run_id,
    )


@dataclass(frozen=True, slots=True)
class FlowContext:
    config: Config
    store: Store
    dispatcher: Dispatcher
    # Set by a step task that executes the step's run itself when the run may start at once (its lane is
    # free), saving a queue hop per step; otherwise runs are dispatched like any other.
    run_inline: Callable[[LaneHead], object] | None = None

    def start(self, session: SessionEntry, new: NewRun) -> None:
        accepted = submit(self.store, self.dispatcher, session, {}, new, dispatch=self.run_inline is None)
        if accepted.is_head and self.run_inline is not None:
            self.run_inline(LaneHead(new.run_id, session.key, new.kind, new.flow_id))


def advance(ctx: FlowContext, flow_id: str, task: StepTask | None = None) -> Action:
    """Work out the flow's next step; do it if ``task`` performs it, else enqueue the task that does.

    Finishing is always done here (it is one write). Returns the action, for the caller to act on a
    ``Deliver``.
    """
    with logs.bound(flow_id=flow_id):
        return _advance(ctx, flow_id, PERFORMS[task] if task else ())


def follow(ctx: FlowContext, flow_id: str, owner: str) -> Action:
    """What a run task (``owner``) does after its run: the flow's next step when it starts a run or
    creates the delivery (``RUN_FOLLOWS``), else hand it to the task that performs it, as ``advance``
    does. A pending delivery is attempted here when its channel is inside clawbus, else handed to the
    delivery task."""
    with logs.bound(flow_id=flow_id):
        action = _advance(ctx, flow_id, RUN_FOLLOWS)
        if isinstance(action, PERFORMS[StepTask.DELIVER]):
            _deliver_or_hand_over(ctx, flow_id, owner)
        return action


def _deliver_or_hand_over(ctx: FlowContext, flow_id: str, owner: str) -> None:
    delivery = ctx.store.flows.get_delivery(delivery_id(flow_id))
    if delivery is None or delivery.status != "pending":  # skipped or blocked: the flow has ended
        return
    local = channels.is_local(ctx.config, delivery.channel)
    if local and deliveries.attempt(ctx.store, ctx.config, flow_id, owner=owner).retry_in is None:
        return
    # An outside channel, or a local attempt that asks for a retry: the delivery task owns the backoff.
    ctx.dispatcher.step(StepTask.DELIVER, flow_id)


@dataclass(frozen=True, slots=True)
class StepDone:
    action: Action
    # Seconds until the delivery is tried again, when an attempt failed in a way a retry may fix.
    retry_in: float | None = None


def perform(ctx: FlowContext, task: StepTask, flow_id: str, owner: str) -> StepDone:
    """What a step task does: advance the flow as ``task``; the delivery task then makes one attempt."""
    action = advance(ctx, flow_id, task)
    if task is StepTask.DELIVER and isinstance(action, PERFORMS[task]):
        return StepDone(action, deliveries.attempt(ctx.store, ctx.config, flow_id, owner=owner).retry_in)
    return StepDone(action)


def _advance(ctx: FlowContext, flow_id: str, performs: tuple[type[Action], ...]) -> Action:
    snap = snapshot(ctx.store, flow_id)
    if snap is None:
        return Finish("gone", "the flow is gone")
    action = next_action(snap, ctx.store.clock.now_ms())
    if isinstance(action, Finish):
        _end(ctx, snap.flow, action)
        return action
    if isinstance(action, Wait):
        if action.until is not None:
            ctx.store.flows.recheck(flow_id, action.until)
        return action
    if not isinstance(action, performs):
        _hand_over(ctx, snap.flow, action)
        return action
    if isinstance(action, StartTurn):
        if not _start_turn(ctx, snap.flow, action):
            return _advance(ctx, flow_id, performs)  # the turn was blocked: what comes after it
    elif isinstance(action, StartAnnounce):
        _start_announce(ctx, snap.flow, action)
    elif isinstance(action, StartDelivery):
        _start_delivery(ctx, snap.flow, action)
    elif isinstance(action, StartSubagentAnnounce):
        _start_subagent_announce(ctx, snap)
    elif isinstance(action, StartSubagentDelivery):
        _start_subagent_delivery(ctx, snap, action)
    return action


def _end(ctx: FlowContext, flow: Flow, finish: Finish) -> None:
    """Every end is counted by reason; one off the normal path is also recorded on the flow (stopReason,
    error) and logged, never silent."""
    early = finish.reason != "completed"
    fields = {"stopReason": finish.reason, "error": finish.error} if early else {}
    if ctx.store.flows.end(flow.flow_id, finish.reason, fields) and early:
        log.warning("flow %s ended early (%s): %s", flow.flow_id, finish.reason, finish.error)


def _hand_over(ctx: FlowContext, flow: Flow, action: Action) -> None:
    task = task_for(action)
    if task is not None:
        ctx.dispatcher.step(task, flow.flow_id, action.turn if isinstance(action, StartTurn) else None)


def _entries(ctx: FlowContext, flow: Flow) -> tuple[SessionEntry, SessionEntry]:
    now = ctx.store.clock.now_ms()
    requester, target = ctx.store.sessions.get_many([flow.requester_key, flow.target_key])
    return (
        requester or new_entry(ctx.config, flow.requester_key, now),
        target or new_entry(ctx.config, flow.target_key, now),
    )


def _start_turn(ctx: FlowContext, flow: Flow, action: StartTurn) -> bool:
    """False if the speaking session's send policy refuses the turn (the loop stops there)."""
    requester, target = _entries(ctx, flow)
    by_requester = action.turn % 2 == 1  # turn 1 is the requester's answer to the target's round-1 reply
    speaker, other = (requester, target) if by_requester else (target, requester)
    if policy.decide(ctx.config, speaker) == "deny":
        ctx.store.flows.update(flow.flow_id, {"blockedTurn": action.turn})
        return False
    now = ctx.store.clock.now_ms()
    run_id = turn_run_id(flow.flow_id, action.turn)
    provenance = Provenance(
        kind="inter_session",
        source_session_key=other.key,
        source_channel=flow.target_channel if by_requester else flow.requester_channel,
        source_tool="sessions_send",
        source_run_id=action.previous_run_id,
    )
    context = reply_context(
        requester=by_requester,
        turn=action.turn,
        max_turns=flow.max_turns,
        requester_key=flow.requester_key,
        requester_channel=flow.requester_channel,
        target_key=flow.target_key,
        target_channel=flow.target_channel,
    )
    new = new_run(
        speaker,
        "reply",
        action.input,
        run_id=run_id,
        now=now,
        provenance=provenance,
        context=context,
        flow_id=flow.flow_id,
        parent_run_id=action.previous_run_id,
        turn=action.turn,
        chain_id=flow.chain_id,
        hops=flow.hops,
    )
    ctx.store.flows.update(
        flow.flow_id, {"turnsStarted": max(flow.turns_started, action.turn)}, due_in_ms=flow.step_timeout_ms
    )
    ctx.start(speaker, new)
    return True


def _start_announce(ctx: FlowContext, flow: Flow, action: StartAnnounce) -> None:
    _requester, target = _entries(ctx, flow)
    if policy.decide(ctx.config, target) == "deny":
        ctx.store.flows.end(
            flow.flow_id, "completed", {"stopReason": action.stop_reason, "deliveryStatus": "blocked"}
        )
        return
    now = ctx.store.clock.now_ms()
    run_id = announce_run_id(flow.flow_id)
    provenance = Provenance(
        kind="inter_session",
        source_session_key=flow.requester_key,
        source_channel=flow.requester_channel,
        source_tool="sessions_send",
    )
    context = announce_context(
        requester_key=flow.requester_key,
        requester_channel=flow.requester_channel,
        target_key=flow.target_key,
        target_channel=flow.target_channel,
        original_request=flow.message,
        round_one_reply=action.round_one,
        latest_reply=action.latest,
    )
    new = new_run(
        target,
        "announce",
        ANNOUNCE_MESSAGE,
        run_id=run_id,
        now=now,
        provenance=provenance,
        context=context,
        flow_id=flow.flow_id,
        chain_id=flow.chain_id,
        hops=flow.hops,
    )
    ctx.store.flows.update(flow.flow_id, {"stopReason": action.stop_reason}, due_in_ms=flow.step_timeout_ms)
    ctx.start(target, new)


def _start_delivery(ctx: FlowContext, flow: Flow, action: StartDelivery) -> None:
    """The announce reply goes to the target's channel, unless silent or refused by send policy."""
    text = action.text.strip()
    if not text or text == ANNOUNCE_SKIP:
        ctx.store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "skipped"})
        return
    _requester, target = _entries(ctx, flow)
    _deliver_to(ctx, flow, target, text)


def _deliver_to(ctx: FlowContext, flow: Flow, session: SessionEntry, text: str) -> None:
    """Create the flow's delivery of ``text`` to ``session``'s route (``sessions.route_of``), unless its
    send policy refuses that channel (the flow then ends ``blocked``)."""
    route = route_of(session)
    if policy.decide(ctx.config, session, channel=route.channel) == "deny":
        ctx.store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "blocked"})
        return
    now = ctx.store.clock.now_ms()
    delivery = Delivery(
        delivery_id=delivery_id(flow.flow_id),
        flow_id=flow.flow_id,
        session_key=session.key,
        channel=route.channel,
        to=route.to,
        account_id=route.account_id,
        thread_id=route.thread_id,
        text=text,
        status="pending",
        created_at=now,
        updated_at=now,
    )
    ctx.store.flows.create_delivery(delivery, due_in_ms=flow.step_timeout_ms)


_SESSION_STATUS: dict[RunStatus, Literal["done", "failed", "killed", "timeout"]] = {
    RunStatus.OK: "done",
    RunStatus.ERROR: "failed",
    RunStatus.TIMEOUT: "timeout",
    RunStatus.ABORTED: "killed",
}


def _start_subagent_announce(ctx: FlowContext, snap: Snapshot) -> None:
    flow, child_run = snap.flow, snap.primary
    assert child_run is not None
    child = ctx.store.sessions.get(flow.target_key)
    if child is None:  # deleted meanwhile: nobody to ask, but the child's outcome is still reported
        _start_subagent_delivery(ctx, snap, StartSubagentDelivery("", "the sub-agent session is gone"))
        ctx.dispatcher.step(StepTask.DELIVER, flow.flow_id)
        return
    ctx.store.sessions.patch(child, SessionPatch({"status": _SESSION_STATUS.get(child_run.status, "failed")}))
    now = ctx.store.clock.now_ms()
    run_id = announce_run_id(flow.flow_id)
    new = new_run(
        child,
        "subagent_announce",
        subagents.ANNOUNCE_MESSAGE,
        run_id=run_id,
        now=now,
        context=subagents.announce_context(flow.task or flow.message, child_run),
        flow_id=flow.flow_id,
        parent_run_id=child_run.run_id,
    )
    ctx.store.flows.update(flow.flow_id, {}, due_in_ms=flow.step_timeout_ms)
    ctx.start(child, new)


def _start_subagent_delivery(ctx: FlowContext, snap: Snapshot, action: StartSubagentDelivery) -> None:
    """Normalize the report, record it in the requester's transcript, post it, clean the child up."""
    flow, store = snap.flow, ctx.store
    child = store.sessions.get(flow.target_key)
    if action.reply.strip() == ANNOUNCE_SKIP:
        store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "skipped"})
        _clean_up(ctx, flow, child)
        return
    if action.degraded:
        log.warning("flow %s: %s; reporting the child's own outcome", flow.flow_id, action.degraded)
        store.flows.update(flow.flow_id, {"error": f"{action.degraded}; reported from the child's outcome"})
    now = store.clock.now_ms()
    tool_results = store.transcripts.last(flow.target_key, 1, keep_role=lambda role: role == "toolResult")
    text = subagents.normalize(
        subagents.AnnounceInputs(
            child=snap.primary,
            announce_reply=action.reply,
            tool_result=tool_results[0].text if tool_results else None,
            session=child,
            transcript_path=str(transcript_path(ctx.config.store_dir(), child)) if child else "?",
        )
    )
    requester = store.sessions.get(flow.requester_key) or new_entry(ctx.config, flow.requester_key, now)
    note = note_id(flow.flow_id)
    provenance = Provenance(
        kind="subagent_announce",
        source_session_key=flow.target_key,
        source_tool="sessions_spawn",
        source_run_id=flow.flow_id,
    )
    record = new_run(requester, "note", text, run_id=note, now=now, provenance=provenance)
    submit(store, ctx.dispatcher, requester, {}, record)
    _deliver_to(ctx, flow, _in_childs_thread(requester, child), text)
    _clean_up(ctx, flow, child)


def _in_childs_thread(requester: SessionEntry, child: SessionEntry | None) -> SessionEntry:
    """A thread-bound child (``thread: true``) reports in its thread, where its conversation is; the
    requester's send policy still judges it."""
    bound = child.delivery_context if child else None
    if bound is None or bound.thread_id is None:
        return requester
    return requester.model_copy(update={"delivery_context": bound})


def _clean_up(ctx: FlowContext, flow: Flow, child: SessionEntry | None) -> None:
    """cleanup=delete: the child goes now (its report is already written); run mode: archived later."""
    if child is None:
        return
    if flow.cleanup == "delete":
        archive.discard(ctx.config, ctx.store, child)
    elif flow.mode == "run":
        minutes = ctx.config.agents.defaults.subagents.archive_after_minutes
        if minutes > 0:
            ctx.store.sessions.schedule_archive(child.key, ctx.store.clock.now_ms() + minutes * 60_000)
