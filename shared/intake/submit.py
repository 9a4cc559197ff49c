"""Accepting a run and turning its fate into the ``sessions_send`` result shapes (docs/contract.md §4).

A caller that wants to wait gets an ``AwaitRun`` back instead of blocking: the HTTP API awaits it on its
pub/sub multiplexer, an agent runtime stores it as a continuation. Both finish it with the run they saw.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from clawbus.shared.domain.chains import Window
from clawbus.shared.domain.runs import Accepted, LaneHead, NewRun, WhenBusy
from clawbus.shared.domain.state_events import StateEvent
from clawbus.shared.ports.dispatch import Dispatcher, DispatchUnavailable
from clawbus.shared.ports.storage.runs import Runs
from clawbus.shared.wire.models import Flow, Run, SessionEntry
from clawbus.shared.wire.send_schema import SendResult, accepted, result_of

log = logging.getLogger(__name__)


class AwaitRun(BaseModel):
    """Wait for ``run_id`` to end, then ``finish`` with what was seen. Plain data: an agent's run stores it
    while it is suspended on the wait."""

    run_id: str
    session_key: str  # as the result names it
    timeout_seconds: float  # as asked for
    # How long an HTTP request may be held (gateway.maxWaitSeconds); a suspended run holds nothing.
    max_wait_seconds: float
    flow_id: str | None = None
    # A send asked to watch its target: whether it does, said by every result (None: not asked).
    watched: bool | None = None

    @property
    def wait_seconds(self) -> float:
        return min(self.timeout_seconds, self.max_wait_seconds)

    def accepted(self) -> SendResult:
        """The answer without the wait: the run is under way."""
        return accepted(self.run_id, self.session_key, self.flow_id).model_copy(
            update={"watched": self.watched}
        )

    def finish(self, run: Run | None) -> SendResult:
        """The result of the wait, with ``run`` as it was seen when it ended (or the wait did): a run still
        going is ``accepted``, as the release answers a wait that ran out."""
        return result_of(self.run_id, self.session_key, run).model_copy(
            update={"flow_id": self.flow_id, "watched": self.watched}
        )

    def finish_over_http(self, run: Run | None) -> SendResult:
        """The result of a wait an HTTP request held for ``wait_seconds``: where gateway.maxWaitSeconds cut
        it shorter than asked, a run still going says so (``note``, clawbus's own), lest the caller
        believe it waited what it asked for."""
        result = self.finish(run)
        if result.status != "accepted" or self.timeout_seconds <= self.max_wait_seconds:
            return result
        cap, asked = self.max_wait_seconds, self.timeout_seconds
        note = (
            f"waited {cap:g}s (gateway.maxWaitSeconds={cap:g} caps a wait over HTTP; {asked:g}s were asked "
            f"for); the run goes on: wait again with GET /v1/runs/{self.run_id}/wait"
        )
        return result.model_copy(update={"note": note})

    def vanished(self) -> SendResult:
        """The awaited run is gone (its session was deleted, or it expired): nothing more will come."""
        return SendResult(
            run_id=self.run_id,
            status="error",
            session_key=self.session_key,
            error=f"run {self.run_id} no longer exists (its session was deleted or the run expired)",
            flow_id=self.flow_id,
            watched=self.watched,
        )


def submit(
    runs: Runs,
    dispatcher: Dispatcher,
    session: SessionEntry,
    updates: dict[str, Any],
    new: NewRun,
    flow: Flow | None = None,
    dispatch: bool = True,
    when_busy: WhenBusy | None = None,
    state_event: StateEvent | None = None,
    window: Window | None = None,
) -> Accepted:
    """Accept the run; enqueue it if it may start now, unless the caller runs it itself (``dispatch=False``:
    then a head it fails to run is dispatched again by the reaper after the grace). ``state_event``: the
    session's state change its acceptance is, recorded with it. ``window``: a send's or spawn's chain
    limit, counted by the accept (``Accepted.chain_full`` when past it: nothing was queued)."""
    head = LaneHead(new.run_id, session.key, new.kind, new.flow_id)
    enqueue = dispatcher.render_run(head) if dispatch else None
    accepted = runs.accept(session, updates, new, flow, enqueue, when_busy, state_event, window)
    if accepted.is_head and dispatch and not accepted.enqueued:
        enqueue_accepted(dispatcher, head)
    return accepted


def enqueue_accepted(dispatcher: Dispatcher, head: LaneHead) -> None:
    """Enqueue a run already accepted. One that cannot be (Redis away past the dispatcher's retries) is
    stored, and its lane is on the reaper's schedule: it is dispatched again after
    runs.dispatchGraceSeconds, so the run is late, not lost, and its caller goes on."""
    try:
        dispatcher.dispatch_run(head)
    except DispatchUnavailable:
        log.exception("run %s accepted but not enqueued; the reaper will dispatch it", head.run_id)


def send_outcome(
    run_id: str,
    session_key: str,
    timeout_seconds: float,
    max_wait_seconds: float,
    flow_id: str | None = None,
    watched: bool | None = None,
) -> SendResult | AwaitRun:
    wait = AwaitRun(
        run_id=run_id,
        session_key=session_key,
        timeout_seconds=timeout_seconds,
        max_wait_seconds=max_wait_seconds,
        flow_id=flow_id,
        watched=watched,
    )
    return wait.accepted() if timeout_seconds == 0 else wait
