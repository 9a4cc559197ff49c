"""Runs: accepted, claimed, committed, cancelled, and the lanes that order them.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from clawbus.shared.domain.chains import Window
from clawbus.shared.domain.runs import (
    Accepted,
    Cancelled,
    Claim,
    Committed,
    Ending,
    Enqueue,
    LaneHead,
    NewRun,
    Stalls,
    SuspendOutcome,
    WhenBusy,
)
from clawbus.shared.domain.state_events import StateEvent
from clawbus.shared.wire.models import (
    Flow,
    Message,
    Run,
    SessionEntry,
    StalledRun,
)


class Runs(Protocol):
    """Runs through their lanes: accepted, claimed, committed, parked, cancelled, reaped."""

    def accept(
        self,
        session: SessionEntry,
        session_updates: dict[str, Any],
        new: NewRun,
        flow: Flow | None = None,
        enqueue: Enqueue | None = None,
        when_busy: WhenBusy | None = None,
        state_event: StateEvent | None = None,
        window: Window | None = None,
    ) -> Accepted:
        """Create-or-touch ``session`` (``session`` holds the fields of a new entry), then queue the run;
        a ``flow`` (whose id is this run's) is created in the same step, and ``enqueue`` (the run's task
        message) is pushed to the broker in it if the run is its lane's head. ``when_busy``: a session with
        runs in its lane refuses the run (``reject``), or folds its message into the collect run still
        open at the lane's end (``collect``, whose window this run opens when there is none); a ``steer``
        is refused (``not_steered``) unless the lane's head is running and of a kind that takes steers.
        ``state_event``: the session's state change the run's acceptance is, recorded in the same step
        (a run folded or refused records none). Its commit and its cancel record the run's end likewise
        (``shared.domain.state_events.run_ended``)."""

    def get(self, run_id: str) -> Run | None: ...

    def claim(
        self,
        run_id: str,
        session_key: str,
        *,
        owner: str,
        attempt: int,
        lease_ms: int,
        max_attempts: int,
        gate_places: int = 0,
        tail: int = 0,
    ) -> Claim:
        """Claim the run for this attempt; a sub-agent run needs one of ``gate_places`` first (0: no gate),
        or it waits in the gate's queue (``GATED``) and is dispatched again when a place frees. ``tail``:
        the transcript's last messages the claimed run's agent reads, read in the same round trip
        (``ExecutionState.tail``; 0: none)."""

    def heartbeat(self, session_key: str, token: str, lease_ms: int) -> bool: ...

    def memoize(self, run: Run, token: str, memo: str) -> bool:
        """Store the loop state (fenced: False if this attempt no longer holds the lease)."""

    def suspend(
        self, run: Run, token: str, memo: str, awaited_run_id: str, deadline_ms: int
    ) -> SuspendOutcome:
        """Park ``run`` until ``awaited_run_id`` ends (its commit returns this run as a waiter) or the
        deadline passes (the reaper dispatches it then); ``memo`` is the loop state to resume from."""

    def park(self, run: Run, token: str, memo: str, due_ms: int) -> SuspendOutcome:
        """Park ``run`` until ``due_ms`` (it waits for model capacity): its lease is parked and ``memo``
        is the loop state to resume from; the caller dispatches it again for then, the reaper is the net."""

    def mark_waiting(self, run_id: str, what: str | None) -> None:
        """Show on the run what it waits for (None: nothing any more)."""

    def commit(self, run: Run, session: SessionEntry | None, token: str, ending: Ending) -> Committed:
        """End the run as ``ending`` says (``shared.domain.runs.Ending``), in one round trip, fenced by the
        lease's ``token``."""

    def cancel(self, run_id: str, reason: str = "run aborted") -> Cancelled:
        """Abort the run now if it is queued or parked (its error: ``reason``), else ask the worker that
        runs it to stop."""

    def cancellations(
        self, on_subscribed: Callable[[], None], stop: threading.Event | None = None
    ) -> Iterator[str | None]:
        """Ids of running runs cancelled from now on, as they are announced; None about once a second
        when nothing came. A dropped connection is subscribed again; ``on_subscribed`` runs after every
        subscription, to read what was announced while nobody listened from the runs themselves."""

    def reap_gate(self, places: int) -> list[LaneHead]:
        """Free the sub-agent gate's places whose lease lapsed; the first runs waiting, one per free place,
        to dispatch again (the commit that frees a place hands on one; a dead worker's places need this)."""

    def absorb_steers(self, run_id: str, session_key: str) -> list[str]:
        """Take the ``steer`` runs queued behind this running run in its lane: they end here, and their
        messages go to this run's next model step. Every one this run ever took, in order."""

    def latest(self, session_key: str) -> Run | None:
        """The session's most recently accepted run (None: it has had none, or it expired)."""

    def get_many(self, run_ids: Sequence[str]) -> list[Run | None]:
        """The runs, in order (None: gone), in one round trip."""

    def accepted(self, session_keys: Sequence[str], kind: str, count: int) -> list[list[str]]:
        """Each session's runs of ``kind`` among the newest ``count`` it accepted, newest first."""

    def inputs(self, run_ids: Sequence[str]) -> list[Message | None]:
        """The messages the runs were started with, in order (None: gone)."""

    def cancel_requested(self, run_id: str) -> bool: ...

    def reap(self, limit: int = 500, everything: bool = False) -> list[LaneHead]:
        """Lane heads to dispatch again: never claimed within the grace, or their lease lapsed; with
        ``everything`` (a recovery pass), every head not under a live lease, however recently dispatched."""

    def lane(self, session_key: str) -> list[str]: ...

    def session_and_lane(self, session_key: str) -> tuple[SessionEntry | None, list[str]]:
        """The session and its lane (run ids, the head first), read in one round trip: what a message to
        it is judged by (its queue mode, its cap)."""

    def add_event(self, run_id: str, fields: dict[str, str]) -> None:
        """Appended once, even when the call is sent again after its reply was lost. An event is the run's
        progress, as a claim and a memoized step are (``watch_stalls``)."""

    def watch_stalls(self, stall_ms: int, batch: int = 500) -> Stalls:
        """The stall watchdog's look: record (once) and count every run whose lease is live but that made
        no progress for ``stall_ms`` (0: none is, and none is recorded); forget the runs that ended or lost
        their lease. How many are stalled now, and the newly stalled."""

    def stalled(self, limit: int = 100) -> list[StalledRun]:
        """The runs recorded stalled now, the longest stalled first."""

    def events(self, run_id: str) -> list[dict[str, str]]: ...
