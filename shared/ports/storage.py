"""The store port: everything the domain asks of storage, in the domain's words (as procrastinate's
``BaseConnector`` or dramatiq's ``Broker``). ``shared.store.Store`` is its Redis adapter; the domain types
against ``Storage`` and never sees a Redis key, a script or a stream cursor.

Composition roots (the workers' context, the API's services, ``workers.testing.world``) build the adapter;
everything under them takes a ``Storage``.

A method's contract is written here, once; the adapter's method says only how it keeps it, where that is
worth saying (``Traffic``, ``Budgets`` and ``IdempotencyKeys`` are described in the modules they name).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol

from clawbus.shared.base.clock import Clock
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.domain.budgets import Limits, Override, Refusal, Reservation, Spend
from clawbus.shared.domain.chains import Window
from clawbus.shared.domain.idempotency import Claimed
from clawbus.shared.domain.runs import (
    Accepted,
    Cancelled,
    Claim,
    Committed,
    Ending,
    Enqueue,
    LaneHead,
    Memo,
    NewRun,
    Stalls,
    SuspendOutcome,
    WhenBusy,
)
from clawbus.shared.domain.sessions import Departed, ReportRecorded, SessionPatch
from clawbus.shared.domain.state_events import StateChanges, StateEvent
from clawbus.shared.domain.traffic import Admission, Ask, CallClose, CallLimits, ModelTraffic
from clawbus.shared.wire.models import (
    Delivery,
    DeliveryClaim,
    DeliveryState,
    FleetFigures,
    Flow,
    FlowEndReason,
    InFlight,
    Message,
    Run,
    SessionEntry,
    Snapshot,
    StalledRun,
    ThreadBinding,
)


class Sessions(Protocol):
    """Session entries, their listings, and their id and label lookups."""

    def get(self, session_key: str) -> SessionEntry | None: ...

    def get_many(self, session_keys: Sequence[str]) -> list[SessionEntry | None]: ...

    def exists(self, session_key: str) -> bool: ...

    def key_for_session_id(self, session_id: str) -> str | None: ...

    def key_for_label(self, agent_id: str, label: str) -> str | None: ...

    def create(self, entry: SessionEntry) -> bool:
        """Create ``entry`` with its indexes unless the session exists; True if it was created."""

    def delete(self, entry: SessionEntry) -> None: ...

    def add_child(self, parent_key: str, child_key: str, *, awaited: bool = True) -> int:
        """Record a child of ``parent_key``, still to report unless not ``awaited`` (it owes no report);
        the children pending now."""

    def yield_children(self, session_key: str, run_id: str) -> tuple[int, int] | None:
        """``run_id`` makes the session wait for its pending children: (the yield's number, children
        pending), or None when none is pending."""

    def record_report(self, parent_key: str, flow_id: str, text: str) -> ReportRecorded | None:
        """A child's report reaches its spawner, applied once (None: the spawner is gone)."""

    def yield_reports(self, session_key: str) -> list[str]:
        """The reports that arrived since the session yielded, in order."""

    def end_wait(self, session_key: str, number: int) -> None:
        """The run that wakes the session from yield ``number`` was accepted: the wait is over."""

    def children(self, parent_key: str) -> list[str]: ...

    def children_of_many(self, parent_keys: Sequence[str]) -> list[list[str]]:
        """Each session's children (ever spawned), in one round trip."""

    def remember_departed(self, entry: SessionEntry, now_ms: int, shown_ms: int, kept_ms: int) -> None:
        """Keep, on the session that spawned ``entry``, what its ``subagents list`` shows of it once it is
        deleted (its entry and its newest runs' ids): its row for ``shown_ms`` from ``now_ms``, the record
        for ``kept_ms`` (at least as long); written before the deletion, again if it is repeated."""

    def departed(self, parent_key: str, now_ms: int) -> list[Departed]:
        """The deleted sub-agents the session still keeps at ``now_ms`` (``remember_departed``)."""

    def schedule_archive(self, session_key: str, at_ms: int) -> None: ...

    def take_due_archives(self, now_ms: int, limit: int = 200) -> list[str]: ...

    def archive(self, entry: SessionEntry, now_ms: int) -> bool:
        """Take the session out of the listings and free its label (False if it is gone)."""

    def patch(self, entry: SessionEntry, patch: SessionPatch) -> SessionEntry | None:
        """Apply a patch atomically; None if the session vanished. Raises LabelTaken."""

    def recent(
        self,
        *,
        agent_id: str | None = None,
        kinds: Sequence[str] | None = None,
        active_since: int | None = None,
        page: int = 100,
        archived: bool = False,
    ) -> Iterator[str]:
        """Keys of the listed sessions of ``agent_id`` (else of these ``kinds``, else all) updated since
        ``active_since`` (ms), newest first: read from the indexes, never a scan of the keyspace.
        ``archived``: the archived ones instead, newest archived first (the caller filters them)."""

    def idle(self, after_ms: int, before_ms: int, limit: int) -> list[tuple[str, int]]:
        """Listed sessions last updated after ``after_ms`` and before ``before_ms``, least recent first,
        with their updatedAt."""


class ColdStoreUnavailable(ClawbusError):
    """The cold transcript store refused a read or a write (a full or read-only folder, an object store
    refusing or out of reach). Redis is untouched by it: a move that meets it leaves its messages hot and is
    tried again later (docs/architecture.md, "Hot and cold transcripts")."""


class Transcripts(Protocol):
    """The sessions' transcripts, read back."""

    def last(
        self, session_key: str, count: int, keep: Callable[[Message], bool] | None = None, page: int = 200
    ) -> list[Message]:
        """The last ``count`` messages (those ``keep`` keeps), oldest first; pages backwards as needed, into
        the cold part when the hot one has too few."""

    def append(self, session_key: str, messages: Sequence[Message]) -> None:
        """Append messages as they are, before the session's first run (a forked child's inherited
        context)."""

    def first(self, session_key: str, count: int) -> list[Message]:
        """The first ``count`` messages, oldest first."""

    def tails(self, session_keys: Sequence[str], count: int) -> list[list[Message]]: ...

    def all(self, session_key: str) -> list[Message]: ...

    def length(self, session_key: str) -> int:
        """Messages in the whole transcript, hot and cold."""

    def hot_length(self, session_key: str) -> int:
        """Messages still in the hot part."""

    def move(self, session_key: str, agent_id: str, session_id: str, keep: int) -> int:
        """Move all but the newest ``keep`` hot messages to the cold part, in order, exactly once; how
        many moved (0 when another move of the session is running, or its moves are backed off after the
        cold store refused one). Raises ``ColdStoreUnavailable`` having trimmed nothing, counted the
        failure for the fleet and backed the session's moves off."""

    def idle_cursor(self) -> int:
        """The updatedAt (ms) up to which idle sessions were moved out."""

    def set_idle_cursor(self, updated_at_ms: int) -> None: ...

    def drop_cold(self, session_key: str) -> None:
        """Delete the session's cold part (the session is being deleted)."""


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
    ) -> Claim:
        """Claim the run for this attempt; a sub-agent run needs one of ``gate_places`` first (0: no gate),
        or it waits in the gate's queue (``GATED``) and is dispatched again when a place frees."""

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


class Flows(Protocol):
    """Flows, their deliveries, and the local outboxes."""

    def get(self, flow_id: str) -> Flow | None: ...

    def snapshot(
        self, flow_id: str, turn_ids: Sequence[str], announce_id: str, delivery_id: str, relay_id: str
    ) -> Snapshot | None: ...

    def update(self, flow_id: str, fields: dict[str, Any], *, due_in_ms: int | None = None) -> bool:
        """Set flow fields; with ``due_in_ms``, the reaper looks at the flow again then. False (nothing
        written) if the flow is gone."""

    def end(self, flow_id: str, reason: FlowEndReason, fields: dict[str, Any] | None = None) -> bool:
        """End the flow with ``fields`` set, counted by ``reason``; False if it had already ended. A flow
        that ends with nothing to deliver (``skipped``, ``blocked``) counts toward the delivery metrics
        here; the delivered and failed ones count when their delivery finishes."""

    def recheck(self, flow_id: str, at_ms: int) -> None:
        """The reaper looks at the flow again no later than ``at_ms`` (a bound that will pass then)."""

    def reap(self, limit: int = 500, everything: bool = False) -> list[str]:
        """Flows past their deadline; each is rescheduled by the grace so it is reported once per grace.
        With ``everything`` (a recovery pass), every flow in progress: its step's message may be lost."""

    def create_delivery(self, delivery: Delivery, *, due_in_ms: int) -> bool:
        """Create the delivery and mark its flow's delivery pending, looked at again by the reaper after
        ``due_in_ms``; False if it already existed (the step ran before)."""

    def get_delivery(self, delivery_id: str) -> Delivery | None: ...

    def claim_delivery(self, delivery_id: str, *, owner: str, lease_ms: int) -> tuple[DeliveryClaim, int]: ...

    def finish_delivery(self, delivery: Delivery, status: DeliveryState, error: str | None = None) -> None:
        """``pending`` releases it for a retry; a final state also ends the flow."""

    def append_outbox(self, channel: str, to: str, delivery_id: str, entry: dict[str, str]) -> str:
        """The delivery's entry in the outbox, appended once: a second call for it answers the entry the
        first made."""

    def read_outbox(
        self, channel: str, to: str, after: str = "-", count: int = 100
    ) -> list[tuple[str, dict[str, str]]]: ...


class Fleet(Protocol):
    """What the whole fleet is doing, and its workers' liveness."""

    def figures(self, queues: Sequence[str]) -> FleetFigures:
        """One round trip for the counters and depths; the heartbeat keys take a SCAN (one per worker)."""

    def in_flight(self, limit: int) -> InFlight:
        """Up to ``limit`` sessions with a run queued or running, each with its lane, and up to ``limit``
        flows in progress, soonest due first; two round trips."""

    def mark_alive(self, hostname: str, ttl_seconds: int) -> None:
        """A worker is consuming: its heartbeat key, which lapses unless refreshed within ``ttl_seconds``."""

    def mark_gone(self, hostname: str) -> None: ...

    def count_dropped(self, policy: str, count: int) -> None:
        """Chat messages a full session queue dropped (``messages.queue.drop``), for the metrics."""

    def server_changed(self) -> bool:
        """Whether the Redis server answering is another one (or another start of it) than the one this
        was last asked of. The first ask records it and says no (nothing came before it); only one of
        several askers at once hears the change."""

    def reaper_ran_at(self) -> int | None: ...


class Traffic(Protocol):
    """Model calls admitted within their model's limits, fleet-wide (``shared.store.traffic``)."""

    def admit(
        self,
        model: str,
        waiter: str,
        *,
        klass: int,
        flow: str,
        weight: int,
        limits: CallLimits,
        tokens: int,
        hold_ms: int,
        grace_ms: int,
    ) -> Admission: ...

    def settle(
        self,
        model: str,
        ticket: str,
        *,
        tokens_used: int | None,
        cooldown_ms: int = 0,
        learned: CallLimits = ...,
        rate_limited: bool = False,
        tokens_in: int = 0,
        tokens_out: int = 0,
        unsent: bool = False,
        limits: CallLimits = ...,
    ) -> None: ...

    def leave(self, model: str, waiter: str) -> None: ...

    def models(self) -> list[str]: ...

    def snapshot(self, models: list[str]) -> list[ModelTraffic]: ...


class Budgets(Protocol):
    """Spend per agent and UTC day and per sub-agent tree, and owners' runtime budgets
    (``shared.store.budgets``)."""

    def reserve(
        self,
        agent_id: str,
        day: str,
        root: str | None,
        limits: Limits,
        *,
        usd_micros: int,
        tokens: int,
        now_ms: int,
        hold: str,
        hold_ms: int,
    ) -> Refusal | None: ...

    def settle(
        self, agent_id: str, day: str, root: str | None, hold: str, *, usd_micros: int, tokens: int
    ) -> None: ...

    def spent(self, agent_ids: list[str], day: str) -> dict[str, Spend]: ...

    def tree(self, root: str) -> Spend: ...

    def trees(self, since_ms: int, limit: int = 100) -> dict[str, Spend]: ...

    def override(self, agent_id: str) -> Override: ...

    def set_override(self, agent_id: str, override: Override) -> None: ...


class ModelCalls(Protocol):
    """A model call's gate, one round trip each way (``shared.store.model_calls``)."""

    def open(self, ask: Ask, reservation: Reservation) -> tuple[Admission, Refusal | None]:
        """Admit the call within its model's limits and reserve its worst case against its budgets
        together. Not admitted: the admission says how long to wait and nothing is reserved. Admitted and
        refused by a budget: the refusal (the caller settles the call unsent)."""
        ...

    def close(self, call: CallClose) -> None:
        """The call is over: settle it in its model's traffic and charge its spend, together."""
        ...

    def close_and_memoize(self, call: CallClose, memo: Memo) -> bool:
        """``close`` and ``Runs.memoize`` in one round trip (a step that called tools is over): False if
        the lease was lost (the memo is not written; the call is closed all the same)."""
        ...

    def memoize_and_open(
        self, memo: Memo, closing: CallClose | None, ask: Ask, reservation: Reservation
    ) -> tuple[bool, Admission, Refusal | None]:
        """The loop state after tool calls that only read, memoized with the last call's settling (when
        it still waits) and ``open`` of the next call, in one round trip: False first if the lease was
        lost (the memo is not written; the next call is admitted all the same, for the caller to close
        unsent)."""
        ...

    def close_and_commit(
        self, call: CallClose, run: Run, session: SessionEntry | None, token: str, ending: Ending
    ) -> Committed:
        """``close`` and ``Runs.commit`` in one round trip (the run's last step is over): the call is closed
        whether or not the commit happens."""
        ...


class IdempotencyKeys(Protocol):
    """Idempotency keys' first uses (``shared.store.idempotency``)."""

    def claim(
        self, principal: str, key: str, fingerprint: str, *, ttl_seconds: int, now_ms: int
    ) -> Claimed: ...

    def remember(self, principal: str, key: str, answer: str, *, ttl_seconds: int) -> None: ...


class ThreadBindings(Protocol):
    """Chat threads bound to sub-agents' sessions."""

    def get(self, channel: str, thread_id: str) -> ThreadBinding | None: ...

    def put(self, binding: ThreadBinding) -> None:
        """Store the binding whole (a new one replaces an older binding of the same thread)."""

    def touch(self, binding: ThreadBinding, now_ms: int) -> None:
        """A message went through the thread: its idle time starts again."""

    def set_limit(self, binding: ThreadBinding, name: Literal["idleTimeoutMs", "maxAgeMs"], ms: int) -> None:
        """Set one of the binding's own limits (0: never), over its channel's, leaving the rest of the
        binding as it is now (a release meanwhile stays)."""

    def release(self, binding: ThreadBinding, now_ms: int) -> None: ...


class A2ARecords(Protocol):
    """Whose each A2A task is, and tasks' push-notification configs (docs/contract.md §12)."""

    def add_task(self, agent_id: str, owner: str, run_id: str, created_at_ms: int) -> None:
        """Record the task as ``owner``'s; tasks older than the runs' retention are forgotten."""

    def owns(self, agent_id: str, owner: str, run_id: str) -> bool: ...
    def tasks(self, agent_id: str, owner: str) -> list[str]:
        """``owner``'s tasks of the agent, newest first."""

    def put_push(self, run_id: str, config_id: str, config: dict[str, Any], due_at_ms: int) -> None:
        """Keep the config (a new one of the same id replaces it) and look at the task at ``due_at_ms``."""

    def push_configs(self, run_id: str) -> dict[str, dict[str, Any]]: ...
    def delete_push(self, run_id: str, config_id: str) -> bool: ...
    def push_states(self, run_id: str) -> dict[str, dict[str, Any]]: ...
    def set_push_state(self, run_id: str, config_id: str, state: dict[str, Any]) -> None: ...
    def claim_push(self, run_id: str, owner: str, lease_ms: int) -> bool:
        """One attempt at a time sends a task's notifications."""

    def release_push(self, run_id: str, owner: str) -> None: ...
    def push_due(self, run_id: str, at_ms: int) -> None: ...
    def push_done(self, run_id: str) -> None: ...
    def pushes_due(self, now_ms: int, limit: int) -> list[str]: ...


class StateLog(Protocol):
    """The sessions' state changes (docs/contract.md §10, "Change tracking"), read back; they are written
    by the steps that make them (``Runs.accept``, its commit and its cancel)."""

    def version(self, session_key: str) -> int:
        """The session's ``stateVersion``: how many changes it has recorded (0: none, or no session)."""

    def since(self, session_key: str, after: int, limit: int) -> StateChanges:
        """The version and the events kept after ``after``, the first ``limit`` of them, read at one
        instant."""

    def watch(self, watcher_key: str, target_key: str) -> bool:
        """``watcher_key`` hears of ``target_key``'s notifying changes after its version now (a watch already
        there is kept as it is); False when the target is gone."""

    def notices(self, watcher_key: str) -> dict[str, int]:
        """The session's pending notices: each watched session's key and the version to reconcile from."""


class Storage(Protocol):
    """The whole port: one repository per concern, and the clock every timestamp comes from."""

    @property
    def clock(self) -> Clock: ...
    @property
    def sessions(self) -> Sessions: ...
    @property
    def transcripts(self) -> Transcripts: ...
    @property
    def runs(self) -> Runs: ...
    @property
    def flows(self) -> Flows: ...
    @property
    def fleet(self) -> Fleet: ...
    @property
    def threads(self) -> ThreadBindings: ...
    @property
    def a2a(self) -> A2ARecords: ...
    @property
    def traffic(self) -> Traffic: ...
    @property
    def budgets(self) -> Budgets: ...
    @property
    def calls(self) -> ModelCalls: ...
    @property
    def idempotency(self) -> IdempotencyKeys: ...
    @property
    def state(self) -> StateLog: ...
