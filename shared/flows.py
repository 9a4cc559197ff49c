"""The agent-to-agent exchange of a sessions_send (SPEC 4): primary run, reply-back turns, announce, delivery.

The flow is not a program counter but a function of what exists: ``next_action`` looks at the flow and its
runs and says what comes next. Every step's run (and the delivery) has an id derived from the flow's, so a
step that runs twice finds its run already accepted and changes nothing. Any task, or the reaper, can
therefore ``advance`` a flow at any time.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from shared import archive, logs, policy, subagents
from shared.config import Config
from shared.contexts import ANNOUNCE_MESSAGE, announce_context, reply_context
from shared.dispatch import Dispatcher
from shared.models import Delivery, Flow, FlowStep, Message, Provenance, Run, RunStatus, SessionEntry
from shared.runtime.base import ANNOUNCE_SKIP, REPLY_SKIP
from shared.sessions import channel_of, new_entry, transcript_path
from shared.store import Store
from shared.store.flows import Snapshot
from shared.store.runs import LaneHead, NewRun
from shared.store.sessions import SessionPatch
from shared.submit import submit

MAX_TURNS = 5
# A step of the exchange waits at most min(timeoutSeconds or 30, 60) s (SPEC 4).
STEP_CAP_S = 60.0
STEP_DEFAULT_S = 30.0


def step_timeout_ms(timeout_seconds: float) -> int:
    return int(min(timeout_seconds or STEP_DEFAULT_S, STEP_CAP_S) * 1000)


def _derived(flow_id: str, name: str) -> str:
    return str(uuid.uuid5(uuid.UUID(flow_id), name))


def turn_run_id(flow_id: str, turn: int) -> str:
    return _derived(flow_id, f"reply:{turn}")


def announce_run_id(flow_id: str) -> str:
    return _derived(flow_id, "announce")


def delivery_id(flow_id: str) -> str:
    return _derived(flow_id, "deliver")


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
        step_timeout_ms=step_timeout_ms(STEP_CAP_S),
        created_at=now,
        updated_at=now,
        chain_id=run_id,
    )


# --- what comes next -----------------------------------------------------------------------------------


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
class StartSubagentAnnounce:
    """The child run ended: ask the child for its report."""


@dataclass(frozen=True, slots=True)
class StartSubagentDelivery:
    reply: str


@dataclass(frozen=True, slots=True)
class Deliver:
    delivery_id: str


@dataclass(frozen=True, slots=True)
class Wait:
    """A step's run has not ended yet (its commit advances the flow)."""


@dataclass(frozen=True, slots=True)
class Finish:
    error: str | None = None


Action = (
    StartTurn
    | StartAnnounce
    | StartDelivery
    | StartSubagentAnnounce
    | StartSubagentDelivery
    | Deliver
    | Wait
    | Finish
)


def snapshot(store: Store, flow_id: str) -> Snapshot | None:
    turn_ids = [turn_run_id(flow_id, t) for t in range(1, MAX_TURNS + 1)]
    return store.flows.snapshot(flow_id, turn_ids, announce_run_id(flow_id), delivery_id(flow_id))


def next_action(snap: Snapshot, now_ms: int) -> Action:
    flow = snap.flow
    if flow.status == "done":
        return Finish()
    if flow.kind == "spawn":
        return _next_for_spawn(snap, now_ms)
    primary = snap.primary
    if primary is None:
        return Finish("the primary run is gone")
    if not primary.status.terminal:
        return _waiting(primary.created_at, flow, now_ms)
    if primary.status is not RunStatus.OK:
        return Finish(f"the primary run ended with status {primary.status.value}")
    round_one = primary.reply or ""
    if not round_one.strip():
        return Finish("the target gave no reply")
    latest, previous_run = round_one, primary.run_id
    stop_reason = flow.loop_skipped or "max turns"
    for turn, run in enumerate(snap.turns[: flow.max_turns], start=1):
        if flow.blocked_turn == turn:
            stop_reason = "send blocked by session policy"
            break
        if run is None:
            return StartTurn(turn, latest, previous_run)
        if not run.status.terminal:
            return _waiting(run.created_at, flow, now_ms)
        if run.status is not RunStatus.OK:
            return Finish(f"reply turn {turn} ended with status {run.status.value}")
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
    if not announce.status.terminal:
        return _waiting(announce.created_at, flow, now_ms)
    if announce.status is not RunStatus.OK:
        return Finish(f"the announce run ended with status {announce.status.value}")
    delivery = snap.delivery
    if delivery is None:
        return StartDelivery(announce.reply or "")
    if delivery.status == "pending":
        return Deliver(delivery.delivery_id)
    return Finish()


def _next_for_spawn(snap: Snapshot, now_ms: int) -> Action:
    """Child run (bounded by its own runTimeoutSeconds, not by the step bound), announce, delivery."""
    child = snap.primary
    if child is None:
        return Finish("the sub-agent run is gone")
    if not child.status.terminal:
        return Wait()
    announce = snap.announce
    if announce is None:
        return StartSubagentAnnounce()
    if not announce.status.terminal:
        return _waiting(announce.created_at, snap.flow, now_ms)
    if snap.delivery is None and snap.flow.delivery_status is None:
        # A failed announce still reports the child's outcome, from its own final reply.
        return StartSubagentDelivery((announce.reply or "") if announce.status is RunStatus.OK else "")
    if snap.delivery is not None and snap.delivery.status == "pending":
        return Deliver(snap.delivery.delivery_id)
    return Finish()


def _waiting(since_ms: int, flow: Flow, now_ms: int) -> Action:
    if now_ms > since_ms + flow.step_timeout_ms:
        return Finish(f"a step did not end within {flow.step_timeout_ms / 1000:g}s")
    return Wait()


# --- doing it ------------------------------------------------------------------------------------------


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


def advance(ctx: FlowContext, flow_id: str, performs: tuple[type, ...] = ()) -> Action:
    """Work out the flow's next step; do it if it is one of ``performs``, else enqueue the task that does.

    Finishing is always done here (it is one write). Returns the action, for the caller to act on a
    ``Deliver``.
    """
    with logs.bound(flow_id=flow_id):
        return _advance(ctx, flow_id, performs)


def _advance(ctx: FlowContext, flow_id: str, performs: tuple[type, ...]) -> Action:
    snap = snapshot(ctx.store, flow_id)
    if snap is None:
        return Finish("the flow is gone")
    action = next_action(snap, ctx.store.clock.now_ms())
    if isinstance(action, Finish):
        if snap.flow.status != "done":
            ctx.store.flows.update(flow_id, {"error": action.error} if action.error else {}, done=True)
        return action
    if isinstance(action, Wait):
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
        _start_subagent_announce(ctx, snap.flow, snap.primary)
    elif isinstance(action, StartSubagentDelivery):
        _start_subagent_delivery(ctx, snap, action)
    return action


def _hand_over(ctx: FlowContext, flow: Flow, action: Action) -> None:
    if isinstance(action, StartTurn):
        ctx.dispatcher.reply_turn(flow.flow_id, action.turn)
    elif isinstance(action, StartAnnounce):
        ctx.dispatcher.announce(flow.flow_id)
    elif isinstance(action, StartSubagentAnnounce):
        ctx.dispatcher.subagent_announce(flow.flow_id)
    elif isinstance(action, StartDelivery | StartSubagentDelivery | Deliver):
        ctx.dispatcher.deliver(flow.flow_id)


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
    new = NewRun(
        run_id=run_id,
        session_key=speaker.key,
        agent_id=speaker.agent_id,
        kind="reply",
        input=Message.of("user", action.input, timestamp=now, run_id=run_id, provenance=provenance),
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
        ctx.store.flows.update(
            flow.flow_id, {"stopReason": action.stop_reason, "deliveryStatus": "blocked"}, done=True
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
    new = NewRun(
        run_id=run_id,
        session_key=target.key,
        agent_id=target.agent_id,
        kind="announce",
        input=Message.of("user", ANNOUNCE_MESSAGE, timestamp=now, run_id=run_id, provenance=provenance),
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
        ctx.store.flows.update(flow.flow_id, {"deliveryStatus": "skipped"}, done=True)
        return
    _requester, target = _entries(ctx, flow)
    route = target.delivery_context
    # A session that never received a routed message has no channel to post to: it goes to the log
    # adapter (the session's outbox), where an operator still sees it.
    channel = (route.channel if route else None) or "log"
    if policy.decide(ctx.config, target, channel=channel) == "deny":
        ctx.store.flows.update(flow.flow_id, {"deliveryStatus": "blocked"}, done=True)
        return
    now = ctx.store.clock.now_ms()
    delivery = Delivery(
        delivery_id=delivery_id(flow.flow_id),
        flow_id=flow.flow_id,
        session_key=target.key,
        channel=channel,
        to=(route.to if route else None) or (None if channel != "log" else target.key),
        account_id=route.account_id if route else None,
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


def _start_subagent_announce(ctx: FlowContext, flow: Flow, child_run: Run | None) -> None:
    assert child_run is not None
    child = ctx.store.sessions.get(flow.target_key)
    if child is None:  # deleted meanwhile: there is nobody to ask
        ctx.store.flows.update(flow.flow_id, {"error": "the sub-agent session is gone"}, done=True)
        return
    ctx.store.sessions.patch(child, SessionPatch({"status": _SESSION_STATUS.get(child_run.status, "failed")}))
    now = ctx.store.clock.now_ms()
    run_id = announce_run_id(flow.flow_id)
    new = NewRun(
        run_id=run_id,
        session_key=child.key,
        agent_id=child.agent_id,
        kind="subagent_announce",
        input=Message.of("user", subagents.ANNOUNCE_MESSAGE, timestamp=now, run_id=run_id),
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
        store.flows.update(flow.flow_id, {"deliveryStatus": "skipped"}, done=True)
        _clean_up(ctx, flow, child)
        return
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
    note_id = _derived(flow.flow_id, "note")
    provenance = Provenance(
        kind="subagent_announce",
        source_session_key=flow.target_key,
        source_tool="sessions_spawn",
        source_run_id=flow.flow_id,
    )
    note = NewRun(
        run_id=note_id,
        session_key=requester.key,
        agent_id=requester.agent_id,
        kind="note",
        input=Message.of("user", text, timestamp=now, run_id=note_id, provenance=provenance),
    )
    submit(store, ctx.dispatcher, requester, {}, note)
    route = requester.delivery_context
    channel = (route.channel if route else None) or "log"
    if policy.decide(ctx.config, requester, channel=channel) == "deny":
        store.flows.update(flow.flow_id, {"deliveryStatus": "blocked"}, done=True)
    else:
        store.flows.create_delivery(
            Delivery(
                delivery_id=delivery_id(flow.flow_id),
                flow_id=flow.flow_id,
                session_key=requester.key,
                channel=channel,
                to=(route.to if route else None) or (requester.key if channel == "log" else None),
                account_id=route.account_id if route else None,
                text=text,
                status="pending",
                created_at=now,
                updated_at=now,
            ),
            due_in_ms=flow.step_timeout_ms,
        )
    _clean_up(ctx, flow, child)


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


def describe(store: Store, flow_id: str) -> Flow | None:
    """The flow as ``GET /v1/flows/{id}`` shows it: each step with its run, and the delivery."""
    snap = snapshot(store, flow_id)
    if snap is None:
        return None
    announce_step: Literal["announce", "subagent_announce"] = (
        "subagent_announce" if snap.flow.kind == "spawn" else "announce"
    )
    steps = [_step("run", snap.primary)]
    steps += [
        _step("reply_turn", run, turn) for turn, run in enumerate(snap.turns[: snap.flow.turns_started], 1)
    ]
    if snap.announce:
        steps.append(_step(announce_step, snap.announce))
    if snap.delivery:
        steps.append(
            FlowStep(step="deliver", session_key=snap.delivery.session_key, status=snap.delivery.status)
        )
    return snap.flow.model_copy(update={"steps": steps, "delivery": snap.delivery})


def _step(
    kind: Literal["run", "reply_turn", "announce", "subagent_announce"],
    run: Run | None,
    turn: int | None = None,
) -> FlowStep:
    if run is None:
        return FlowStep(step=kind, turn=turn)
    return FlowStep(
        step=kind,
        turn=turn,
        run_id=run.run_id,
        session_key=run.session_key,
        status=run.status.value,
        reply=run.reply,
    )
