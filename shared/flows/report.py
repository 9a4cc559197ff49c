"""The steps of a ``sessions_spawn`` report: the child's latest reply read as its result, the report recorded,
relayed by the requester and delivered."""

from __future__ import annotations

import logging
from typing import Literal

from clawbus.shared.base.flow_ids import note_id, relay_run_id, report_run_id, wake_run_id
from clawbus.shared.domain import chains, subagents
from clawbus.shared.domain.chains import Chain
from clawbus.shared.domain.runs import NewRun, new_run
from clawbus.shared.domain.sessions import ReportRecorded, SessionPatch, new_entry, transcript_path
from clawbus.shared.flows.cleanup import clean_up
from clawbus.shared.flows.decide import DeliverRelay
from clawbus.shared.flows.flow_context import FlowContext
from clawbus.shared.flows.outbound import deliver_to
from clawbus.shared.intake.submit import submit
from clawbus.shared.ports.runtime import ANNOUNCE_SKIP, NO_REPLY
from clawbus.shared.wire.models import Flow, Provenance, RunStatus, SessionEntry, Snapshot

log = logging.getLogger(__name__)

# What a requester may answer to say nothing of its child's report.
SILENT = frozenset({NO_REPLY, ANNOUNCE_SKIP})

# The requester's turn on a report of a spawn with ``completionTarget: "parent"``: nothing of it is posted.
PRIVATE_RELAY_CONTEXT = (
    'Private sub-agent completion: a sub-agent you spawned with completionTarget="parent" has finished, '
    "and its report is the message above (internal context from the sub-agent, not written by the user). "
    "Nothing of this turn is sent to a channel. Review the result, then go on with your work (another step, "
    'another sub-agent) or stay silent; if there is nothing to do, reply exactly "NO_REPLY".'
)

_SESSION_STATUS: dict[RunStatus, Literal["done", "failed", "killed", "timeout"]] = {
    RunStatus.OK: "done",
    RunStatus.ERROR: "failed",
    RunStatus.TIMEOUT: "timeout",
    RunStatus.ABORTED: "killed",
}


def settle_quietly(ctx: FlowContext, snap: Snapshot) -> None:
    """A fire-and-forget child ended: nothing is announced, recorded or posted for its requester (the
    release skips the completion handoff and records the delivery as not required); its session still
    says how it ended, and it is cleaned up as any child."""
    flow, child_run = snap.flow, snap.latest or snap.primary
    assert child_run is not None
    child = ctx.store.sessions.get(flow.target_key)
    if child is not None:
        status = _SESSION_STATUS.get(child_run.status, "failed")
        ctx.store.sessions.patch(child, SessionPatch({"status": status}))
    ctx.store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "not_required"})
    clean_up(ctx, flow, child)


def start_subagent_delivery(ctx: FlowContext, snap: Snapshot) -> None:
    """The child's latest reply is its result (no model step on the child, as the release reads it):
    normalize the report, record it in the requester's transcript, hand it on, clean the child up."""
    flow, store = snap.flow, ctx.store
    # An orchestrator's outcome is that of its latest run (the one on its children's reports).
    outcome = snap.latest or snap.primary
    assert outcome is not None
    child = store.sessions.get(flow.target_key)
    if child is not None and child.killed_at is None:  # a killed child's session says killed
        ended = _SESSION_STATUS.get(outcome.status, "failed")
        child = store.sessions.patch(child, SessionPatch({"status": ended}))
    if (outcome.reply or "").strip() in SILENT:
        # Silent, yet the child is no longer pending for its requester (a yield may wait for it).
        status = subagents.status_of(outcome)
        token = (outcome.reply or "").strip()
        silent = f"Sub-agent {flow.target_key} ended ({status}) and reported nothing ({token})."
        requester = _recipient(ctx, flow)
        recorded = store.sessions.record_report(requester.key, flow.flow_id, silent)
        if recorded is not None and requester.spawned_by is not None:
            chain = _chain_back(snap, requester.key)
            _report_inside(ctx, flow, requester, recorded, silent, chain, post_single=False)
        store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "skipped"})
        clean_up(ctx, flow, child)
        return
    now = store.clock.now_ms()
    tool_results = store.transcripts.last(
        flow.target_key, 1, keep=lambda message: message.role == "toolResult"
    )
    text = subagents.normalize(
        subagents.ReportInputs(
            child=outcome,
            started_at=snap.primary.started_at if snap.primary else None,
            tool_result=tool_results[0].text if tool_results else None,
            session=child,
            transcript_path=transcript_path(ctx.config.store_url(), child) if child else "?",
        )
    )
    requester = _recipient(ctx, flow)
    recorded = store.sessions.record_report(requester.key, flow.flow_id, text)
    chain = _chain_back(snap, requester.key)
    # The report is in: the child's archive clock starts now, whatever the requester makes of it.
    clean_up(ctx, flow, child)
    if requester.spawned_by is not None and recorded is not None:
        # A sub-agent requester takes the report in as a follow-up of its own, never posted to a channel.
        _report_inside(ctx, flow, requester, recorded, text, chain, post_single=True)
        store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "delivered"})
    else:
        # A top-level requester's agent takes the report in and says what came of it in its own words:
        # its turn's reply is what reaches the channel (``deliver_relay``), as the release hands it on.
        ctx.start(requester, _relay(flow, requester, text, now, chain))
        ctx.store.flows.update(flow.flow_id, {}, due_in_ms=flow.step_timeout_ms)


def deliver_relay(ctx: FlowContext, snap: Snapshot, action: DeliverRelay) -> None:
    """Post what the requester said of its child's report, to its route (the child's thread when it was
    bound to one); nothing when it chose silence. A relay that failed posts the report itself."""
    flow, store = snap.flow, ctx.store
    if flow.completion_target == "parent":
        _end_private(ctx, flow, action)
        return
    text = action.reply
    if text is None:
        log.warning("flow %s: %s; posting the report as it is", flow.flow_id, action.degraded)
        store.flows.update(flow.flow_id, {"error": f"{action.degraded}; the report was posted as it is"})
        [report] = store.runs.inputs([relay_run_id(flow.flow_id)])
        text = report.text if report else ""
    if text.strip() in SILENT or not text.strip():
        store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "skipped"})
        return
    requester = _recipient(ctx, flow)
    deliver_to(ctx, flow, _in_childs_thread(requester, store.sessions.get(flow.target_key)), text)


def _end_private(ctx: FlowContext, flow: Flow, action: DeliverRelay) -> None:
    """A private completion was delivered by the requester's turn itself (the report is its input, in its
    transcript); nothing goes to a channel, not even when that turn failed."""
    fields = {"deliveryStatus": "delivered"}
    if action.reply is None:
        log.warning("flow %s: %s; a private report is not posted", flow.flow_id, action.degraded)
        fields["error"] = f"{action.degraded}; the report stays private (completionTarget=parent)"
    ctx.store.flows.end(flow.flow_id, "completed", fields)


def _recipient(ctx: FlowContext, flow: Flow) -> SessionEntry:
    """Who gets the report: the requester, else (it is gone) its nearest spawner that still is; with none
    left, the requester as a new session (its report still goes to its route, or its log outbox)."""
    candidates = [flow.requester_key, *flow.ancestors]
    for entry in ctx.store.sessions.get_many(candidates):
        if entry is not None and entry.archived_at is None:
            return entry
    return new_entry(ctx.config, flow.requester_key, ctx.store.clock.now_ms())


def _chain_back(snap: Snapshot, requester_key: str) -> Chain:
    """The chain a report's run carries: the child's, back where its requester spawned it (a report is no
    hop), in the session that gets it."""
    child = snap.primary
    assert child is not None
    return chains.in_session(chains.back_to_spawner(chains.of_run(child)), requester_key)


def _relay(flow: Flow, requester: SessionEntry, text: str, now: int, chain: Chain) -> NewRun:
    """The requester's turn on the report: the report is its input (so it stays in its transcript, marked
    as a sub-agent's), the relay instruction its system text for this turn only."""
    return new_run(
        requester,
        "relay",
        text,
        run_id=relay_run_id(flow.flow_id),
        now=now,
        provenance=_provenance(flow),
        context=PRIVATE_RELAY_CONTEXT if flow.completion_target == "parent" else subagents.RELAY_CONTEXT,
        flow_id=flow.flow_id,
        **chains.fields(chain),
    )


def _note(flow: Flow, requester: SessionEntry, text: str, now: int) -> NewRun:
    """The report in a top-level requester's transcript: recorded in turn, with no agent step."""
    return new_run(
        requester, "note", text, run_id=note_id(flow.flow_id), now=now, provenance=_provenance(flow)
    )


def _provenance(flow: Flow) -> Provenance:
    return Provenance(
        kind="subagent_announce",
        source_session_key=flow.target_key,
        source_tool="sessions_spawn",
        source_run_id=flow.flow_id,
    )


def _report_inside(
    ctx: FlowContext,
    flow: Flow,
    requester: SessionEntry,
    recorded: ReportRecorded,
    text: str,
    chain: Chain,
    *,
    post_single: bool,
) -> None:
    """A report to a sub-agent requester: a run of its own on it (the requester synthesizes its children's
    results), or, while it waits for its children (``sessions_yield``), one run on all their reports once
    the last has come. A killed requester only records it. Each run's id derives from what it answers, so a
    repeated report starts nothing twice."""
    store, now = ctx.store, ctx.store.clock.now_ms()
    if recorded.killed:
        submit(store.runs, ctx.dispatcher, requester, {}, _note(flow, requester, text, now))
        return
    if recorded.awaited is None:
        if post_single:
            _start_report_run(ctx, requester, report_run_id(flow.flow_id), text, _provenance(flow), chain)
        return
    if not recorded.wakes:
        return  # more children to come: the report waits in the yield's list
    reports = store.sessions.yield_reports(requester.key)
    woken = [f"Your sub-agents reported ({len(reports)}), in the order they ended:", *reports]
    assert requester.spawn_flow_id is not None, "a sub-agent requester has its spawn flow"
    run_id = wake_run_id(requester.spawn_flow_id, recorded.awaited)
    _start_report_run(ctx, requester, run_id, "\n\n".join(woken), _provenance(flow), chain)
    store.sessions.end_wait(requester.key, recorded.awaited)


def _start_report_run(
    ctx: FlowContext, requester: SessionEntry, run_id: str, text: str, provenance: Provenance, chain: Chain
) -> None:
    """A run of ``requester`` on its children's report(s), in its lane behind what it is doing. It belongs
    to the requester's own spawn flow, which is told first (a flow that knows of a run not yet accepted
    waits for it), so the requester is reported only once it is done with its children."""
    now = ctx.store.clock.now_ms()
    flow_id = requester.spawn_flow_id
    if flow_id is not None:
        ctx.store.flows.update(flow_id, {"lastRunId": run_id})
    new = new_run(
        requester,
        "report",
        text,
        run_id=run_id,
        now=now,
        provenance=provenance,
        flow_id=flow_id,
        **chains.fields(chain),
    )
    ctx.start(requester, new)


def _in_childs_thread(requester: SessionEntry, child: SessionEntry | None) -> SessionEntry:
    """A thread-bound child (``thread: true``) reports in its thread, where its conversation is; the
    requester's send policy still judges it."""
    bound = child.delivery_context if child else None
    if bound is None or bound.thread_id is None:
        return requester
    return requester.model_copy(update={"delivery_context": bound})
