"""A tree's time: the runs of a flow, or of a session's sub-agent tree, as waterfall rows
(shared/domain/waterfall.py says what each holds and what is not recorded), read from clawbus's own records.

Access is the flow's and the tree's: a flow is unknown (404) to a token that may act for neither of its
sessions, as ``GET /v1/flows/{id}`` has it; a session's tree is the session's to see as
``GET /v1/sessions/{key}/subagents`` has it (403 for another agent's key, decided from the key alone)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query

from clawbus.api.deps import PrincipalDep, ServicesDep
from clawbus.api.errors import ErrorResponse, not_found
from clawbus.api.params import SessionKeyPath
from clawbus.api.routes.flows import FlowId
from clawbus.api.routes.resolve import session_context
from clawbus.shared.domain import logs
from clawbus.shared.domain.waterfall import RunRecords, Waterfall, rows
from clawbus.shared.flows.view import snapshot
from clawbus.shared.store import Store
from clawbus.shared.tools.subagents_view import descendants
from clawbus.shared.wire.models import Message, Run

router = APIRouter(tags=["waterfall"])
_errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorResponse} for code in (400, 401, 403, 404)}
# How far back a session's transcript is read for the messages its runs wrote (pages of it, newest first).
FIRST_PAGE = 200
MAX_MESSAGES = 10_000


@router.get(
    "/v1/flows/{flow_id}/waterfall",
    response_model=Waterfall,
    response_model_exclude_none=True,
    responses=_errors,
)
def flow_waterfall(flow_id: FlowId, services: ServicesDep, principal: PrincipalDep) -> Waterfall:
    """The flow's runs (primary run, reply-back turns, announce, a spawn's later runs and relay), the
    requester's session at depth 0 and the target's at 1."""
    with logs.bound(flow_id=flow_id):
        snap = snapshot(services.store.flows, flow_id)
        flow = snap.flow if snap else None
        if (
            snap is None
            or flow is None
            or not (principal.may_act_as(flow.requester_key) or principal.may_act_as(flow.target_key))
        ):
            raise not_found(f"Flow not found: {flow_id}")
        named = [snap.primary, *snap.turns[: flow.turns_started], snap.announce, snap.latest, snap.relay]
        runs = [run for run in named if run is not None]
        depth = {flow.requester_key: 0}
        depth.setdefault(flow.target_key, 1)
        return _waterfall(services.store, runs, {run.run_id: depth.get(run.session_key, 0) for run in runs})


@router.get(
    "/v1/sessions/{key}/waterfall",
    response_model=Waterfall,
    response_model_exclude_none=True,
    responses=_errors,
)
def session_waterfall(
    key: SessionKeyPath,
    services: ServicesDep,
    principal: PrincipalDep,
    limit: Annotated[
        int, Query(ge=1, le=1000, description="The newest runs kept, over the session and its tree")
    ] = 200,
) -> Waterfall:
    """The session's runs and those of every sub-agent below it (recursively), each at its session's depth
    below this one."""
    ctx = session_context(services, principal, key)
    root = ctx.caller_key
    with logs.bound(session_key=root):
        store = services.store
        depth = {root: 0}
        for entry in descendants(store, root, recursive=True):
            depth[entry.key] = depth.get(entry.spawned_by or "", 0) + 1
        run_ids = _session_runs(store, list(depth), limit)
        found = [run for run in (store.runs.get(run_id) for run_id in run_ids) if run is not None]
        runs = sorted(found, key=lambda run: run.created_at)[-limit:]
        return _waterfall(store, runs, {run.run_id: depth.get(run.session_key, 0) for run in runs})


def _session_runs(store: Store, session_keys: Sequence[str], limit: int) -> list[str]:
    """The newest ``limit`` runs each session accepted, as its run stream names them."""
    pipe = store.redis.pipeline(transaction=False)
    for session_key in session_keys:
        pipe.xrevrange(store.keys.session_runs(session_key), count=limit)
    return [fields["runId"] for entries in pipe.execute() for _id, fields in entries if "runId" in fields]


def _waterfall(store: Store, runs: Sequence[Run], depth: dict[str, int]) -> Waterfall:
    messages = _messages_by_run(store, runs)
    records = [
        RunRecords(
            run=run,
            depth=depth.get(run.run_id, 0),
            messages=messages.get(run.run_id, []),
            events=store.runs.events(run.run_id) if run.started_at is not None else [],
        )
        for run in runs
    ]
    return Waterfall(rows=rows(records), now=store.clock.now_ms())


def _messages_by_run(store: Store, runs: Iterable[Run]) -> dict[str, list[Message]]:
    """The transcript messages each ended run wrote, in transcript order. A run's messages reach the
    transcript when it commits, so only ended runs are looked for; each session's transcript is read from
    its newest message back to before the oldest such run was created (or MAX_MESSAGES)."""
    oldest: dict[str, int] = {}
    for run in runs:
        if run.ended_at is not None:
            oldest[run.session_key] = min(oldest.get(run.session_key, run.created_at), run.created_at)
    wanted = {run.run_id for run in runs if run.ended_at is not None}
    found: dict[str, list[Message]] = {}
    for session_key, since in oldest.items():
        for message in _transcript_since(store, session_key, since):
            if message.run_id in wanted:
                found.setdefault(message.run_id, []).append(message)
    return found


def _transcript_since(store: Store, session_key: str, since_ms: int) -> list[Message]:
    """The session's latest messages, back to one written before ``since_ms`` (runs of a session run one at
    a time, so their messages are in the order of their times)."""
    count = FIRST_PAGE
    while True:
        page = store.transcripts.last(session_key, count)
        if len(page) < count or count >= MAX_MESSAGES or (page and page[0].timestamp < since_ms):
            return page
        count *= 4
