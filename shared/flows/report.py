"""The steps of a ``sessions_spawn`` report: the child's announce step, then its report, recorded and
delivered."""

from __future__ import annotations

import logging
from typing import Literal

from shared import subagents
from shared.dispatch import StepTask
from shared.flows.cleanup import clean_up
from shared.flows.context import FlowContext
from shared.flows.decide import StartSubagentDelivery
from shared.flows.ids import announce_run_id, note_id
from shared.flows.outbound import deliver_to
from shared.models import Provenance, RunStatus, SessionEntry, Snapshot
from shared.runs import new_run
from shared.runtime.base import ANNOUNCE_SKIP
from shared.sessions import SessionPatch, new_entry, transcript_path
from shared.submit import submit

log = logging.getLogger(__name__)

_SESSION_STATUS: dict[RunStatus, Literal["done", "failed", "killed", "timeout"]] = {
    RunStatus.OK: "done",
    RunStatus.ERROR: "failed",
    RunStatus.TIMEOUT: "timeout",
    RunStatus.ABORTED: "killed",
}


def start_subagent_announce(ctx: FlowContext, snap: Snapshot) -> None:
    flow, child_run = snap.flow, snap.primary
    assert child_run is not None
    child = ctx.store.sessions.get(flow.target_key)
    if child is None:  # deleted meanwhile: nobody to ask, but the child's outcome is still reported
        start_subagent_delivery(ctx, snap, StartSubagentDelivery("", "the sub-agent session is gone"))
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


def start_subagent_delivery(ctx: FlowContext, snap: Snapshot, action: StartSubagentDelivery) -> None:
    """Normalize the report, record it in the requester's transcript, post it, clean the child up."""
    flow, store = snap.flow, ctx.store
    child = store.sessions.get(flow.target_key)
    if action.reply.strip() == ANNOUNCE_SKIP:
        store.flows.end(flow.flow_id, "completed", {"deliveryStatus": "skipped"})
        clean_up(ctx, flow, child)
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
    deliver_to(ctx, flow, _in_childs_thread(requester, child), text)
    clean_up(ctx, flow, child)


def _in_childs_thread(requester: SessionEntry, child: SessionEntry | None) -> SessionEntry:
    """A thread-bound child (``thread: true``) reports in its thread, where its conversation is; the
    requester's send policy still judges it."""
    bound = child.delivery_context if child else None
    if bound is None or bound.thread_id is None:
        return requester
    return requester.model_copy(update={"delivery_context": bound})
