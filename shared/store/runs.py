"""Runs and the per-session lanes that order them.

The life of a run, each step one Lua script (atomic):

- ``accept``: record the run and append it to its session's lane; only the lane head may execute.
- ``claim``: compare-and-set on (status, lane head, lease) that hands out a fencing token and returns the
  run and session the attempt needs.
- ``heartbeat``: keep the lease while the agent works.
- ``memoize``: store the agent loop's state between model steps, so a retried attempt resumes it.
- ``suspend``: park a run whose tool call waits for another run; that run's commit wakes it.
- ``commit``: transcript + terminal state + lane advance + completion signal, returning the next head and
  the runs that waited for this one.
- ``reap``: lanes whose head was never claimed or whose lease lapsed, to be dispatched again.
- ``watch_stalls``: runs whose lease is renewed but that made no progress for ``runs.stallSeconds``
  (claim, add_event and memoize restart a run's progress clock on the way; commit forgets it).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from redis import Redis
from redis.commands.core import Script

from clawbus.shared.base.clock import Clock
from clawbus.shared.domain import state_events
from clawbus.shared.domain.chains import Window
from clawbus.shared.domain.runs import (
    Accepted,
    Cancelled,
    CancelOutcome,
    Claim,
    ClaimOutcome,
    Committed,
    Ending,
    Enqueue,
    ExecutionState,
    LaneHead,
    NewRun,
    Stalls,
    SuspendOutcome,
    WhenBusy,
)
from clawbus.shared.domain.state_events import StateEvent
from clawbus.shared.ports.storage import NotReplicated, StoreUnavailable
from clawbus.shared.store.codec import decode, encode, encode_values
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import REPEAT_WINDOW_MS, ScriptCall, Scripts, call_id, run_pipelined
from clawbus.shared.store.state_log import watch_arg
from clawbus.shared.wire.models import Flow, Message, Run, RunStatus, SessionEntry, StalledRun

# The runs ``stalled`` lists (``GET /v1/status``), the longest stalled first.
STALLED_LISTED = 100
# With the watchdog off (``runs.stallSeconds`` 0), how old a run's progress is before the reaper's look
# forgets it, if it ended or lost its lease (the scripts that restart the clock run whatever the setting).
UNWATCHED_PRUNE_MS = 60_000


class RunStore:
    def __init__(
        self,
        client: Redis,
        keys: RedisKeys,
        scripts: Scripts,
        clock: Clock,
        *,
        dispatch_grace_ms: int,
        retention_seconds: int,
        replica_acks: int = 0,
        replica_ack_timeout_ms: int = 500,
    ) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts
        self._clock = clock
        self._grace_ms = dispatch_grace_ms
        self._retention_s = retention_seconds
        self._replica_acks = replica_acks
        self._replica_ack_timeout_ms = replica_ack_timeout_ms

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
        k = self._keys
        run_fields = encode_values(
            {
                **new.model_dump(mode="json", by_alias=True, exclude={"input"}),
                "chainId": new.chain_id or new.run_id,
                "input": new.input.model_dump_json(by_alias=True, exclude_none=True),
            }
        )
        run_fields = {field: value for field, value in run_fields.items() if value != "null"}
        now = self._clock.now_ms()
        if when_busy is not None and when_busy.action == "collect":
            run_fields["collectUntil"] = str(now + when_busy.window_ms)
        keys = [
            k.session(session.key),
            *k.session_indexes(session.agent_id, session.kind),
            k.session_id(session.session_id),
            k.lane(session.key),
            k.run(new.run_id),
            k.run_events(new.run_id),
            k.lanes_due(),
            k.flow(new.run_id),
            k.flows_due(),
            k.metrics_runs_created(),
            k.session_runs(session.key),
            enqueue.queue if enqueue else k.session_runs(session.key),  # unused without a message
            k.folded(new.run_id),
            k.state_log(session.key),
            k.chain_sends(new.chain_id or new.run_id),
        ]
        args = [
            now,
            new.run_id,
            session.key,
            json.dumps(encode(session)),
            json.dumps(encode_values({k: v for k, v in session_updates.items() if v is not None})),
            json.dumps(run_fields),
            self._grace_ms,
            json.dumps(encode(flow)) if flow else "",
            flow.created_at + min(self._grace_ms, flow.flow_timeout_ms) if flow else 0,
            new.kind,
            enqueue.message if enqueue else "",
            enqueue.event_channel if enqueue else "",
            enqueue.event if enqueue else "",
            when_busy.action if when_busy else "",
            new.input.text,
            k.run_prefix(),
            REPEAT_WINDOW_MS,
            state_events.encoded(state_event),
            watch_arg(k),
            ",".join(sorted(when_busy.takes_steers)) if when_busy else "",
            window.max_sends if window else 0,
            window.window_ms if window else 0,
        ]
        found = self._replicated(self._scripts.accept, keys, args)
        if found[0] == "busy":
            return Accepted(new.run_id, session.key, 0, False, busy_with=found[1])
        if found[0] == "idle":
            return Accepted(new.run_id, session.key, 0, False, not_steered=True)
        if found[0] == "folded":
            return Accepted(new.run_id, session.key, 0, False, folded_into=found[1])
        if found[0] == "chain_full":
            return Accepted(new.run_id, session.key, 0, False, chain_full=True)
        seq, position, pushed = found
        return Accepted(new.run_id, session.key, int(seq), int(position) == 1, bool(int(pushed)))

    def _replicated(self, script: Script, keys: list[str], args: list[Any]) -> Any:
        """Run ``script``; with ``redis.replicaAcks``, answer only once that many replicas have its
        writes, so a failover right after cannot lose what the caller was told is accepted."""
        if not self._replica_acks:
            return script(keys=keys, args=args)
        wait = ("WAIT", self._replica_acks, self._replica_ack_timeout_ms)
        result, acked = run_pipelined(self._redis, [(script, keys, args)], then=wait)
        if int(acked) < self._replica_acks:
            raise NotReplicated(
                f"{acked} of {self._replica_acks} replica(s) confirmed the accept within "
                f"{self._replica_ack_timeout_ms} ms (redis.replicaAcks)"
            )
        return result

    def get(self, run_id: str) -> Run | None:
        fields = self._redis.hgetall(self._keys.run(run_id))
        return decode(Run, fields) if fields else None

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
        k = self._keys
        result = self._scripts.claim(
            keys=[
                k.run(run_id),
                k.lane(session_key),
                k.lease(session_key),
                k.transcript(session_key),
                k.run_events(run_id),
                k.lanes_due(),
                k.fence_counter(),
                k.session(session_key),
                k.subagent_gate(),
                k.subagent_gate_queue(),
                k.runs_progress(),
                k.runs_stalled(),
                k.notices(session_key),
                k.cold(session_key),
            ],
            args=[
                run_id,
                owner,
                attempt,
                self._clock.now_ms(),
                lease_ms,
                max_attempts,
                session_key,
                gate_places,
                k.run_prefix(),
                call_id(),
                state_events.NOTICE_LINE,
                tail,
            ],
        )
        outcome = ClaimOutcome(result[0])
        if outcome is ClaimOutcome.EARLY:
            return Claim(outcome, retry_in_ms=int(result[1]))
        if outcome not in (ClaimOutcome.CLAIMED, ClaimOutcome.EXHAUSTED):
            return Claim(outcome)
        run_fields, session_fields = _pairs(result[3]), _pairs(result[4])
        state = ExecutionState(
            run=decode(Run, run_fields),
            input=Message.model_validate_json(run_fields["input"]) if "input" in run_fields else None,
            memo=run_fields.get("memo"),
            session=decode(SessionEntry, session_fields) if session_fields else None,
            tail=_tail(result[5:], tail),
            tail_size=tail,
        )
        return Claim(outcome, token=result[1], attempts=int(result[2]), state=state)

    def heartbeat(self, session_key: str, token: str, lease_ms: int) -> bool:
        k = self._keys
        now = self._clock.now_ms()
        held = self._scripts.heartbeat(
            keys=[k.lease(session_key), k.lanes_due(), k.subagent_gate(), k.runs_progress()],
            args=[token, now + lease_ms, session_key, now],
        )
        return bool(held)

    def memoize(self, run: Run, token: str, memo: str) -> bool:
        script, keys, args = self.memoize_call(run, token, memo)
        return bool(script(keys=keys, args=args))

    def memoize_call(self, run: Run, token: str, memo: str) -> ScriptCall:
        k = self._keys
        keys = [k.run(run.run_id), k.lease(run.session_key), k.runs_progress(), k.runs_stalled()]
        return self._scripts.memoize, keys, [token, memo, self._clock.now_ms(), run.run_id]

    def suspend(
        self, run: Run, token: str, memo: str, awaited_run_id: str, deadline_ms: int
    ) -> SuspendOutcome:
        k = self._keys
        result = self._scripts.suspend(
            keys=[
                k.run(run.run_id),
                k.lease(run.session_key),
                k.lanes_due(),
                k.waiters(awaited_run_id),
                k.run(awaited_run_id),
            ],
            args=[token, memo, deadline_ms, run.session_key, run.run_id, call_id()],
        )
        return SuspendOutcome(result)

    def park(self, run: Run, token: str, memo: str, due_ms: int) -> SuspendOutcome:
        k = self._keys
        result = self._scripts.suspend(
            keys=[k.run(run.run_id), k.lease(run.session_key), k.lanes_due()],
            args=[token, memo, due_ms, run.session_key, run.run_id, call_id()],
        )
        return SuspendOutcome(result)

    def mark_waiting(self, run_id: str, what: str | None) -> None:
        self._scripts.mark_waiting(keys=[self._keys.run(run_id)], args=[what or ""])

    def commit(
        self,
        run: Run,
        session: SessionEntry | None,
        token: str,
        ending: Ending,
        *,
        before: Sequence[ScriptCall] = (),
    ) -> Committed:
        """``before``: calls sent in the same round trip ahead of the commit (a model call's settling)."""
        k = self._keys
        outcome, memo, context_tokens = ending.outcome, ending.memo, ending.context_tokens
        calls = [
            *before,
            *(self.add_event_call(run.run_id, event) for event in ending.events),
            *([self.memoize_call(run, token, memo)] if memo is not None else []),
        ]
        fields = encode_values(
            {"reply": outcome.reply, "error": outcome.error, "usage": outcome.usage.wire()}
        )
        fields = {field: value for field, value in fields.items() if value != "null"}
        agent_id = session.agent_id if session else run.agent_id
        kind = session.kind if session else "other"
        usage = outcome.usage
        commit_keys = [
            k.run(run.run_id),
            k.lease(run.session_key),
            k.lane(run.session_key),
            k.session(run.session_key),
            k.transcript(run.session_key),
            k.run_events(run.run_id),
            k.lanes_due(),
            *k.session_indexes(agent_id, kind),
            k.flows_due(),
            k.waiters(run.run_id),
            k.metrics_runs_finished(),
            k.subagent_gate(),
            k.subagent_gate_queue(),
            k.runs_progress(),
            k.runs_stalled(),
            k.state_log(run.session_key),
        ]
        ended = state_events.run_ended(run.kind, outcome.status, run.run_id)
        commit_args: list[Any] = [
            run.run_id,
            token,
            self._clock.now_ms(),
            outcome.status.value,
            json.dumps(fields),
            "" if context_tokens is None else context_tokens,
            self._retention_s,
            k.run_done_channel(run.run_id),
            self._grace_ms,
            k.run_prefix(),
            run.session_key,
            # The session's totals add what is known.
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            repr(usage.cost_usd or 0.0),
            call_id(),
            state_events.encoded(ended),
            watch_arg(k),
            *(message.model_dump_json(by_alias=True, exclude_none=True) for message in ending.messages),
        ]
        calls.append((self._scripts.commit, commit_keys, commit_args))
        result = run_pipelined(self._redis, calls)[-1]
        if result[0] != "committed":
            return Committed(False)
        *found, hot_length = result
        next_head = LaneHead(found[1], run.session_key, found[2], found[3] or None) if found[1] else None
        waiters = [LaneHead(found[i], found[i + 1], found[i + 2]) for i in range(4, len(found), 3)]
        return Committed(True, next_head, waiters, int(hot_length))

    def cancel(self, run_id: str, reason: str = "run aborted") -> Cancelled:
        run = self.get(run_id)
        if run is None:
            return Cancelled(CancelOutcome.MISSING)
        k = self._keys
        result = self._scripts.cancel_run(
            keys=[
                k.run(run_id),
                k.lane(run.session_key),
                k.lease(run.session_key),
                k.session(run.session_key),
                k.run_events(run_id),
                k.lanes_due(),
                k.flows_due(),
                k.waiters(run_id),
                k.metrics_runs_finished(),
                k.state_log(run.session_key),
            ],
            args=[
                run_id,
                self._clock.now_ms(),
                self._retention_s,
                k.run_done_channel(run_id),
                k.cancel_channel(),
                self._grace_ms,
                k.run_prefix(),
                run.session_key,
                reason,
                call_id(),
                state_events.encoded(state_events.run_ended(run.kind, RunStatus.ABORTED, run_id)),
                watch_arg(k),
            ],
        )
        outcome = CancelOutcome(result[0])
        if outcome is CancelOutcome.ENDED:
            return Cancelled(outcome, RunStatus(result[1]))
        if outcome is not CancelOutcome.ABORTED:
            return Cancelled(outcome)
        next_head = LaneHead(result[1], run.session_key, result[2], result[3] or None) if result[1] else None
        waiters = [LaneHead(result[i], result[i + 1], result[i + 2]) for i in range(4, len(result), 3)]
        return Cancelled(outcome, RunStatus.ABORTED, next_head, waiters, run.flow_id)

    def cancellations(
        self, on_subscribed: Callable[[], None], stop: threading.Event | None = None
    ) -> Iterator[str | None]:
        while stop is None or not stop.is_set():
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self._keys.cancel_channel())
                on_subscribed()
                while stop is None or not stop.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    yield message["data"] if message and message["type"] == "message" else None
            except StoreUnavailable:
                time.sleep(0.5)
            finally:
                pubsub.close()

    def reap_gate(self, places: int) -> list[LaneHead]:
        k = self._keys
        found = self._scripts.reap_gate(
            keys=[k.subagent_gate(), k.subagent_gate_queue()],
            args=[self._clock.now_ms(), places, k.run_prefix()],
        )
        return [LaneHead(found[i], found[i + 1], found[i + 2]) for i in range(0, len(found), 3)]

    def absorb_steers(self, run_id: str, session_key: str) -> list[str]:
        k = self._keys
        absorbed: list[str] = self._scripts.absorb_steers(
            keys=[k.lane(session_key), k.absorbed(run_id), k.metrics_runs_finished()],
            args=[
                run_id,
                k.run_prefix(),
                self._clock.now_ms(),
                self._retention_s,
                k.run_done_channel_prefix(),
                k.run_events_prefix(),
            ],
        )
        return absorbed

    def latest(self, session_key: str) -> Run | None:
        newest = self._redis.xrevrange(self._keys.session_runs(session_key), count=1)
        return self.get(newest[0][1]["runId"]) if newest else None

    def get_many(self, run_ids: Sequence[str]) -> list[Run | None]:
        pipe = self._redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hgetall(self._keys.run(run_id))
        return [decode(Run, fields) if fields else None for fields in pipe.execute()]

    def accepted(self, session_keys: Sequence[str], kind: str, count: int) -> list[list[str]]:
        # The runs stream names run ids only: their kinds are read in a second round trip, not whole runs.
        pipe = self._redis.pipeline(transaction=False)
        for session_key in session_keys:
            pipe.xrevrange(self._keys.session_runs(session_key), count=count)
        ids = [
            [fields["runId"] for _id, fields in entries if "runId" in fields] for entries in pipe.execute()
        ]
        every = [run_id for found in ids for run_id in found]
        pipe = self._redis.pipeline(transaction=False)
        for run_id in every:
            pipe.hget(self._keys.run(run_id), "kind")
        kinds = dict(zip(every, pipe.execute(), strict=True))
        return [[run_id for run_id in found if kinds[run_id] == kind] for found in ids]

    def inputs(self, run_ids: Sequence[str]) -> list[Message | None]:
        pipe = self._redis.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.hget(self._keys.run(run_id), "input")
        return [Message.model_validate_json(raw) if raw else None for raw in pipe.execute()]

    def cancel_requested(self, run_id: str) -> bool:
        return bool(self._redis.hget(self._keys.run(run_id), "cancelRequested") == "1")

    def reap(self, limit: int = 500, everything: bool = False) -> list[LaneHead]:
        k = self._keys
        now = self._clock.now_ms()
        # Scripts learn session keys and run ids as they go, so they get those families' key prefixes.
        flat = self._scripts.reap(
            keys=[k.lanes_due(), k.reaper_ran(), k.reaped_lanes(call_id())],
            args=[
                now,
                limit,
                self._grace_ms,
                k.lane_prefix(),
                k.lease_prefix(),
                k.run_prefix(),
                "+inf" if everything else now,
                REPEAT_WINDOW_MS,
            ],
        )
        return [
            LaneHead(flat[i], flat[i + 1], flat[i + 2], flat[i + 3] or None) for i in range(0, len(flat), 4)
        ]

    def lane(self, session_key: str) -> list[str]:
        return list(self._redis.lrange(self._keys.lane(session_key), 0, -1))

    def session_and_lane(self, session_key: str) -> tuple[SessionEntry | None, list[str]]:
        # No MULTI: the judgment was two reads before, and a transaction would add two commands to each.
        pipe = self._redis.pipeline(transaction=False)
        pipe.hgetall(self._keys.session(session_key))
        pipe.lrange(self._keys.lane(session_key), 0, -1)
        fields, lane = pipe.execute()
        return (decode(SessionEntry, fields) if fields else None), list(lane)

    def add_event(self, run_id: str, fields: dict[str, str]) -> None:
        script, keys, args = self.add_event_call(run_id, fields)
        script(keys=keys, args=args)

    def add_event_call(self, run_id: str, fields: dict[str, str]) -> ScriptCall:
        k = self._keys
        keys = [k.run_events(run_id), k.run(run_id), k.runs_progress(), k.runs_stalled()]
        args = [call_id(), self._clock.now_ms(), run_id, *(part for pair in fields.items() for part in pair)]
        return self._scripts.add_event, keys, args

    def watch_stalls(self, stall_ms: int, batch: int = 500) -> Stalls:
        k = self._keys
        found = self._scripts.watch_stalls(
            keys=[k.runs_progress(), k.runs_stalled(), k.metrics_run_stalls()],
            args=[
                self._clock.now_ms(),
                # Off (0), the look only forgets runs that ended or lost their lease, whose progress is
                # older than a lease could be renewed without.
                stall_ms or UNWATCHED_PRUNE_MS,
                "1" if stall_ms > 0 else "0",
                batch,
                k.run_prefix(),
                k.lease_prefix(),
            ],
        )
        fresh = [_stalled(found[i], found[i + 1]) for i in range(1, len(found), 2)]
        return Stalls(int(found[0]), fresh)

    def stalled(self, limit: int = STALLED_LISTED) -> list[StalledRun]:
        records = self._redis.hgetall(self._keys.runs_stalled())
        found = sorted((_stalled(run_id, raw) for run_id, raw in records.items()), key=lambda r: r.since)
        return found[:limit]

    def events(self, run_id: str) -> list[dict[str, str]]:
        return [fields for _id, fields in self._redis.xrange(self._keys.run_events(run_id))]


def _stalled(run_id: str, raw: str) -> StalledRun:
    return StalledRun.model_validate({**json.loads(raw), "runId": run_id})


def _pairs(flat: list[str]) -> dict[str, str]:
    return dict(zip(flat[0::2], flat[1::2], strict=True))


def _tail(read: list[Any], size: int) -> list[Message] | None:
    """The claim's transcript tail, oldest first; None when none was read (a repeat of a claim answers
    without one) or when it ran short with a cold part behind it."""
    if size == 0 or not read:
        return None
    newest_first, has_cold = read[0], read[1]
    if len(newest_first) < size and has_cold:
        return None
    return [Message.model_validate_json(raw) for raw in reversed(newest_first)]
