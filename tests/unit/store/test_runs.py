"""shared/store/runs.py and its Lua scripts: accept, claim, heartbeat, commit (with memo), reap."""

from __future__ import annotations

import json
import uuid
from typing import Any

import fakeredis
import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import (
    Accepted,
    CancelOutcome,
    ClaimOutcome,
    Committed,
    Ending,
    NewRun,
    Outcome,
    SuspendOutcome,
)
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.store import Store
from clawbus.shared.store import runs as store_runs
from clawbus.shared.store.cold import ColdTranscripts
from clawbus.shared.wire.models import Message, Run, RunStatus
from tests.support.replies import reply_lost
from tests.support.runs import KEY, LEASE_MS, accept, claim, ok

OTHER = "agent:main:webchat:direct:bob"


def test_accept_creates_the_session_and_queues_the_first_run_as_head(store: Store, config: Config) -> None:
    first = accept(store, config)
    second = accept(store, config)
    assert first.is_head
    assert not second.is_head
    assert (first.seq, second.seq) == (1, 2)
    assert store.runs.lane(KEY) == [first.run_id, second.run_id]
    run = store.runs.get(first.run_id)
    assert run is not None
    assert run.status is RunStatus.QUEUED
    entry = store.sessions.get(KEY)
    assert entry is not None
    assert entry.kind == "other"
    assert store.sessions.key_for_session_id(entry.session_id) == KEY


def test_accept_keeps_the_session_it_already_has(store: Store, config: Config, clock: FixedClock) -> None:
    accept(store, config)
    entry = store.sessions.get(KEY)
    clock.advance(5)
    accept(store, config)
    again = store.sessions.get(KEY)
    assert again is not None
    assert entry is not None
    assert again.session_id == entry.session_id
    assert again.created_at == entry.created_at
    assert again.updated_at == entry.updated_at + 5000


def test_claim_appends_the_input_once_and_starts_the_run(store: Store, config: Config) -> None:
    accepted = accept(store, config, "first message")
    claimed = claim(store, accepted.run_id)
    assert claimed.outcome is ClaimOutcome.CLAIMED
    assert claimed.attempts == 1
    run = store.runs.get(accepted.run_id)
    assert run is not None
    assert run.status is RunStatus.RUNNING
    assert run.started_at is not None
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["first message"]


def test_a_second_run_of_the_session_cannot_claim_before_the_first_ends(store: Store, config: Config) -> None:
    first, second = accept(store, config), accept(store, config)
    assert claim(store, first.run_id).outcome is ClaimOutcome.CLAIMED
    assert claim(store, second.run_id, owner="task-2").outcome is ClaimOutcome.NOT_HEAD


def test_a_live_lease_makes_other_attempts_busy(store: Store, config: Config) -> None:
    accepted = accept(store, config)
    claim(store, accepted.run_id, owner="task-1")
    assert claim(store, accepted.run_id, owner="task-2").outcome is ClaimOutcome.BUSY
    # A redelivery of the same message (same retry count) is busy too: the first may still be running.
    assert claim(store, accepted.run_id, owner="task-1", attempt=0).outcome is ClaimOutcome.BUSY


def test_a_retry_after_worker_loss_takes_the_lease_over_at_once(store: Store, config: Config) -> None:
    accepted = accept(store, config, "only once")
    first = claim(store, accepted.run_id, owner="task-1", attempt=0)
    retried = claim(store, accepted.run_id, owner="task-1", attempt=1)
    assert retried.outcome is ClaimOutcome.CLAIMED
    assert retried.token != first.token
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["only once"]


def test_a_claim_sent_again_after_its_reply_was_lost_is_still_the_callers(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    accepted = accept(store, config, "only once")
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    claimed = claim(store, accepted.run_id, owner="task-1", attempt=0)
    monkeypatch.undo()
    assert claimed.outcome is ClaimOutcome.CLAIMED
    assert claimed.attempts == 1
    assert store.runs.heartbeat(KEY, claimed.token, LEASE_MS)  # the lease is this claim's
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["only once"]
    # Another delivery of the same message is a claim of its own: still busy.
    assert claim(store, accepted.run_id, owner="task-1", attempt=0).outcome is ClaimOutcome.BUSY


def test_a_commit_sent_again_after_its_reply_was_lost_still_hands_on_the_next_head(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = accept(store, config, "one"), accept(store, config, "two")
    token = claim(store, first.run_id).token
    monkeypatch.setattr(store_runs, "run_pipelined", reply_lost(store_runs.run_pipelined))
    committed = ok(store, first.run_id, token, "reply one")
    monkeypatch.undo()
    assert committed.committed
    assert committed.next_head is not None
    assert committed.next_head.run_id == second.run_id
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["one", "reply one"]
    entry = store.sessions.get(KEY)
    assert entry is not None
    assert entry.total_tokens == 5  # counted once
    # Another commit holding the same token is not a repeat of this one: it changes nothing.
    assert not ok(store, first.run_id, token, "again").committed


def one_claimed_run_awaiting_another(store: Store, config: Config) -> tuple[Run, str, Accepted, str]:
    """A run of KEY (and its token) about to wait for a run of OTHER (and its token), both claimed."""
    waiting = accept(store, config, "wait for it")
    awaited = accept(store, config, "slow", key=OTHER)
    token = claim(store, waiting.run_id).token
    awaited_token = claim(store, awaited.run_id, key=OTHER).token
    run = store.runs.get(waiting.run_id)
    assert run is not None
    return run, token, awaited, awaited_token


def test_a_suspend_sent_again_after_the_awaited_run_ended_meanwhile_still_parks(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The awaited run ends between the call and its repeat (waking the parked run): the repeat must not
    answer ``ready``, or the attempt goes on beside the resumed one."""
    run, token, awaited, awaited_token = one_claimed_run_awaiting_another(store, config)
    woken: list[Committed] = []
    first_call = store.redis.evalsha

    def awaited_ends_before_the_repeat(*args: Any) -> Any:
        first_call(*args)
        woken.append(ok(store, awaited.run_id, awaited_token))  # its commit is pipelined, not evalsha
        return first_call(*args)

    monkeypatch.setattr(store.redis, "evalsha", awaited_ends_before_the_repeat)
    parked = store.runs.suspend(run, token, "{}", awaited.run_id, store.clock.now_ms() + 60_000)
    monkeypatch.undo()
    assert parked is SuspendOutcome.SUSPENDED
    assert [w.run_id for w in woken[0].waiters] == [run.run_id]  # the resume is the woken one's


def test_a_commit_wakes_the_runs_parked_on_it_and_only_a_run_awaited_says_so(
    store: Store, config: Config
) -> None:
    """The commit reads its run's hash anyway: ``awaited`` there is what sends it to the waiters' set, so
    a run nobody waits for (nearly every run) is committed without a look at it."""
    run, token, awaited, awaited_token = one_claimed_run_awaiting_another(store, config)
    assert store.redis.hget(store.keys.run(awaited.run_id), "awaited") is None
    parked = store.runs.suspend(run, token, "{}", awaited.run_id, store.clock.now_ms() + 60_000)
    assert parked is SuspendOutcome.SUSPENDED
    assert store.redis.hget(store.keys.run(awaited.run_id), "awaited") == "1"
    assert store.redis.hget(store.keys.run(run.run_id), "awaited") is None
    assert [w.run_id for w in ok(store, awaited.run_id, awaited_token).waiters] == [run.run_id]


def test_a_cancel_sent_again_after_its_reply_was_lost_still_hands_on_the_next_head(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = accept(store, config, "one"), accept(store, config, "two")
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    cancelled = store.runs.cancel(first.run_id)
    monkeypatch.undo()
    assert cancelled.outcome is CancelOutcome.ABORTED
    assert cancelled.next_head is not None
    assert cancelled.next_head.run_id == second.run_id


def test_an_event_sent_again_after_its_reply_was_lost_is_in_the_runs_stream_once(
    store: Store, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A follower of the run's stream would show that piece of streamed text twice."""
    accepted = accept(store, config)
    claim(store, accepted.run_id)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    store.runs.add_event(accepted.run_id, {"type": "text", "text": "Hel"})
    monkeypatch.undo()
    store.runs.add_event(accepted.run_id, {"type": "text", "text": "Hel"})  # the model said it again
    texts = [e["text"] for e in store.runs.events(accepted.run_id) if e["type"] == "text"]
    assert texts == ["Hel", "Hel"]


def test_a_lapsed_lease_can_be_claimed_by_anyone(store: Store, config: Config, clock: FixedClock) -> None:
    accepted = accept(store, config)
    claim(store, accepted.run_id, owner="task-1")
    clock.advance(LEASE_MS / 1000 + 0.001)
    assert claim(store, accepted.run_id, owner="task-2").outcome is ClaimOutcome.CLAIMED


def test_a_takeover_counts_the_lapsed_attempt_as_interrupted_and_says_so_in_the_events(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    claim(store, accepted.run_id, owner="task-1")
    first = store.runs.get(accepted.run_id)
    assert first is not None
    assert first.interrupted == 0  # a first attempt interrupts nothing
    clock.advance(LEASE_MS / 1000 + 0.001)
    claim(store, accepted.run_id, owner="task-2")
    run = store.runs.get(accepted.run_id)
    assert run is not None
    assert (run.attempts, run.interrupted) == (2, 1)
    lost = [e for e in store.runs.events(accepted.run_id) if e["type"] == "interrupted"]
    assert [e["attempt"] for e in lost] == ["1"]


def test_the_old_holder_cannot_commit_after_a_takeover(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    stale = claim(store, accepted.run_id, owner="task-1")
    clock.advance(LEASE_MS / 1000 + 1)
    fresh = claim(store, accepted.run_id, owner="task-2")
    assert not ok(store, accepted.run_id, stale.token).committed
    assert ok(store, accepted.run_id, fresh.token).committed


def test_commit_is_atomic_and_hands_over_the_next_head(store: Store, config: Config) -> None:
    first, second = accept(store, config, "one"), accept(store, config, "two")
    token = claim(store, first.run_id).token
    committed = ok(store, first.run_id, token, "reply one")
    assert committed.committed
    assert committed.next_head is not None
    assert committed.next_head.run_id == second.run_id
    assert committed.next_head.kind == "chat"
    run = store.runs.get(first.run_id)
    assert run is not None
    assert run.status is RunStatus.OK
    assert run.reply == "reply one"
    assert run.usage.input_tokens == 3
    assert store.runs.lane(KEY) == [second.run_id]
    assert [m.text for m in store.transcripts.last(KEY, 10)] == ["one", "reply one"]
    entry = store.sessions.get(KEY)
    assert entry is not None
    assert entry.total_tokens == 5
    assert entry.estimated_cost_usd == 0.5


def test_commit_publishes_completion_on_the_runs_channel(
    store: Store, config: Config, redis_client: fakeredis.FakeRedis
) -> None:
    accepted = accept(store, config)
    pubsub = redis_client.pubsub()
    pubsub.subscribe(store.keys.run_done_channel(accepted.run_id))
    pubsub.get_message(timeout=1)
    ok(store, accepted.run_id, claim(store, accepted.run_id).token)
    message = pubsub.get_message(timeout=1)
    assert message is not None
    ended = json.loads(message["data"])
    assert ended["status"] == "ok"
    assert ended["runId"] == accepted.run_id
    assert "input" not in ended


def test_terminal_runs_never_change(store: Store, config: Config) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    ok(store, accepted.run_id, token, "final")
    assert claim(store, accepted.run_id, owner="late").outcome is ClaimOutcome.DONE
    assert not ok(store, accepted.run_id, token, "again").committed
    run = store.runs.get(accepted.run_id)
    assert run is not None
    assert run.reply == "final"


def test_finished_runs_expire_after_the_retention(
    store: Store, config: Config, redis_client: fakeredis.FakeRedis
) -> None:
    accepted = accept(store, config)
    ok(store, accepted.run_id, claim(store, accepted.run_id).token)
    ttl = redis_client.ttl(store.keys.run(accepted.run_id))
    assert 0 < ttl <= config.runs.retention_hours * 3600


def test_claims_beyond_max_attempts_are_exhausted(store: Store, config: Config) -> None:
    accepted = accept(store, config)
    for attempt in range(3):
        assert claim(store, accepted.run_id, owner="t", attempt=attempt).outcome is ClaimOutcome.CLAIMED
    assert claim(store, accepted.run_id, owner="t", attempt=3).outcome is ClaimOutcome.EXHAUSTED


def test_a_claim_returns_what_the_attempt_needs(store: Store, config: Config) -> None:
    accepted = accept(store, config, "the input")
    claimed = claim(store, accepted.run_id)
    assert claimed.state is not None
    assert claimed.state.run.status is RunStatus.RUNNING
    assert claimed.state.input is not None
    assert claimed.state.input.text == "the input"
    assert claimed.state.session is not None
    assert claimed.state.session.key == KEY
    assert claimed.state.memo is None


def test_a_session_and_its_lane_are_read_together(store: Store, config: Config) -> None:
    assert store.runs.session_and_lane(KEY) == (None, [])
    first, second = accept(store, config, "one"), accept(store, config, "two")
    session, lane = store.runs.session_and_lane(KEY)
    assert session == store.sessions.get(KEY)
    assert lane == [first.run_id, second.run_id] == store.runs.lane(KEY)


@pytest.mark.parametrize("size", [2, 3, 10])
def test_a_claim_reads_the_transcripts_tail_as_a_read_of_its_own_would(
    store: Store, config: Config, size: int
) -> None:
    first = accept(store, config, "one")
    assert ok(store, first.run_id, claim(store, first.run_id).token, "reply one").committed
    second = accept(store, config, "two")
    claimed = store.runs.claim(
        second.run_id, KEY, owner="t", attempt=0, lease_ms=LEASE_MS, max_attempts=3, tail=size
    )
    assert claimed.state is not None
    assert claimed.state.tail == store.transcripts.last(KEY, size)
    assert [m.text for m in claimed.state.tail][-1] == "two"  # the input it appended, last
    assert claimed.state.tail_size == size


def test_a_claim_leaves_a_tail_that_runs_into_the_cold_part_to_a_whole_read(
    store: Store, config: Config, tmp_path: Any
) -> None:
    store.transcripts._cold = ColdTranscripts(str(tmp_path / "cold"))
    for text in ("one", "two", "three"):
        accepted = accept(store, config, text)
        assert ok(store, accepted.run_id, claim(store, accepted.run_id).token, f"reply {text}").committed
    assert store.transcripts.move(KEY, "main", "s1", 2) == 4  # four older messages in the cold file
    fourth = accept(store, config, "four")
    claimed = store.runs.claim(
        fourth.run_id, KEY, owner="t", attempt=0, lease_ms=LEASE_MS, max_attempts=3, tail=5
    )
    assert claimed.state is not None
    assert claimed.state.tail is None
    assert [m.text for m in store.transcripts.last(KEY, 5)] == [
        "two",
        "reply two",
        "three",
        "reply three",
        "four",
    ]


def test_a_memo_left_by_a_failed_commit_comes_back_with_the_next_claim(store: Store, config: Config) -> None:
    accepted = accept(store, config)
    claim(store, accepted.run_id, owner="t", attempt=0)
    # The memo landed, the commit did not (the worker died between them).
    store.redis.hset(store.keys.run(accepted.run_id), "memo", json.dumps({"reply": "memo"}))
    retried = claim(store, accepted.run_id, owner="t", attempt=1)
    assert retried.state is not None
    assert retried.state.memo is not None
    assert json.loads(retried.state.memo)["reply"] == "memo"


def test_a_stale_token_stores_neither_memo_nor_outcome(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    stale = claim(store, accepted.run_id, owner="t1").token
    clock.advance(LEASE_MS / 1000 + 1)
    claim(store, accepted.run_id, owner="t2")
    run = store.runs.get(accepted.run_id)
    assert run is not None
    committed = store.runs.commit(
        run, None, stale, Ending(Outcome(RunStatus.OK, reply="late"), [], memo='{"reply":"x"}')
    )
    assert not committed.committed
    assert store.redis.hget(store.keys.run(accepted.run_id), "memo") is None


def test_commit_memoizes_then_ends_the_run_in_one_round_trip(store: Store, config: Config) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    run = store.runs.get(accepted.run_id)
    assert run is not None
    assert store.runs.commit(
        run, None, token, Ending(Outcome(RunStatus.OK, reply="r"), [], memo='{"reply":"r"}')
    ).committed
    # A committed run needs no memo any more: the reply is on the run.
    assert store.redis.hget(store.keys.run(accepted.run_id), "memo") is None


def test_heartbeat_extends_only_the_holders_lease(store: Store, config: Config, clock: FixedClock) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    clock.advance(2)
    assert store.runs.heartbeat(KEY, token, LEASE_MS)
    clock.advance(2)  # past the first expiry, within the renewed one
    assert claim(store, accepted.run_id, owner="other").outcome is ClaimOutcome.BUSY
    assert not store.runs.heartbeat(KEY, "stale", LEASE_MS)


def test_reap_finds_heads_never_claimed_within_the_grace(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    assert store.runs.reap() == []
    clock.advance(config.runs.dispatch_grace_seconds + 1)
    heads = store.runs.reap()
    assert [(h.run_id, h.session_key, h.kind) for h in heads] == [(accepted.run_id, KEY, "chat")]
    assert store.runs.reap() == []  # rescheduled, not reported twice


def test_a_reap_sent_again_after_its_reply_was_lost_still_finds_the_stalled_heads(
    store: Store, config: Config, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    accepted = accept(store, config)
    clock.advance(config.runs.dispatch_grace_seconds + 1)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    heads = store.runs.reap()
    monkeypatch.undo()
    assert [h.run_id for h in heads] == [accepted.run_id]
    assert store.runs.reap() == []  # another pass is not the same call: still reported once


def test_a_recovery_reap_dispatches_every_head_not_under_a_live_lease_at_once(
    store: Store, config: Config
) -> None:
    """After a Redis restart or failover a head's message may be lost however recently it was sent: the
    recovery pass takes every unleased head now, and leaves a leased one to its worker."""
    idle = accept(store, config)
    running = accept(store, config, key="agent:main:cron:busy")
    store.runs.claim(
        running.run_id, running.session_key, owner="task-1", attempt=0, lease_ms=LEASE_MS, max_attempts=3
    )
    assert store.runs.reap() == []  # nothing is due yet
    heads = store.runs.reap(everything=True)
    assert [h.run_id for h in heads] == [idle.run_id]
    assert store.runs.reap() == []  # rescheduled by the grace like any re-dispatch


def test_reap_finds_lanes_whose_lease_lapsed(store: Store, config: Config, clock: FixedClock) -> None:
    accepted = accept(store, config)
    claim(store, accepted.run_id)
    clock.advance(1)
    assert store.runs.reap() == []
    clock.advance(LEASE_MS / 1000)
    assert [h.run_id for h in store.runs.reap()] == [accepted.run_id]


def test_reap_leaves_alone_a_lane_whose_worker_keeps_its_lease(
    store: Store, config: Config, clock: FixedClock
) -> None:
    accepted = accept(store, config)
    token = claim(store, accepted.run_id).token
    for _ in range(5):
        clock.advance(2)
        store.runs.heartbeat(KEY, token, LEASE_MS)
        assert store.runs.reap() == []


def test_reap_forgets_lanes_that_emptied(
    store: Store, config: Config, clock: FixedClock, redis_client: fakeredis.FakeRedis
) -> None:
    accepted = accept(store, config)
    ok(store, accepted.run_id, claim(store, accepted.run_id).token)
    clock.advance(config.runs.dispatch_grace_seconds + 1)
    assert store.runs.reap() == []
    assert redis_client.zcard(store.keys.lanes_due()) == 0


def test_run_events_record_the_life_of_a_run(store: Store, config: Config) -> None:
    accepted = accept(store, config)
    ok(store, accepted.run_id, claim(store, accepted.run_id).token)
    assert [e["type"] for e in store.runs.events(accepted.run_id)] == ["queued", "started", "ended"]


def test_accepting_the_same_run_twice_queues_it_once(store: Store, config: Config) -> None:
    first, second = accept(store, config), accept(store, config)

    def again(run_id: str) -> Accepted:
        message = Message.of("user", "hi", timestamp=1, run_id=run_id)
        new = NewRun(run_id=run_id, session_key=KEY, agent_id="main", kind="chat", input=message)
        return store.runs.accept(new_entry(config, KEY, 1), {}, new)

    # A repeated accept of a head that has not started says so: its caller dispatches it (again).
    assert (again(first.run_id).seq, again(first.run_id).is_head) == (first.seq, True)
    assert again(second.run_id).is_head is False
    claim(store, first.run_id)
    assert again(first.run_id).is_head is False
    assert store.runs.lane(KEY) == [first.run_id, second.run_id]


def test_the_accept_pushes_a_heads_task_message_itself_and_only_a_heads(store: Store, config: Config) -> None:
    from clawbus.shared.domain.runs import Enqueue

    def accept_with(text: str, run_id: str | None = None) -> Accepted:
        run_id = run_id or str(uuid.uuid4())
        message = Message.of("user", text, timestamp=store.clock.now_ms(), run_id=run_id)
        new = NewRun(run_id=run_id, session_key=KEY, agent_id="main", kind="chat", input=message)
        enqueue = Enqueue("runs", f"message of {run_id}", "events", f"sent {run_id}")
        return store.runs.accept(new_entry(config, KEY, store.clock.now_ms()), {}, new, None, enqueue)

    events = store.redis.pubsub()
    events.subscribe("events")
    head = accept_with("first")
    behind = accept_with("second")
    again = accept_with("first", head.run_id)  # a retried call: the run is not queued, nor pushed, twice
    assert (head.is_head, head.enqueued) == (True, True)
    assert (behind.is_head, behind.enqueued) == (False, False)
    assert (again.is_head, again.enqueued) == (True, False)
    assert store.redis.lrange("runs", 0, -1) == [f"message of {head.run_id}"]
    heard = [m["data"] for m in iter(lambda: events.get_message(timeout=0.1), None) if m["type"] == "message"]
    assert heard == [f"sent {head.run_id}"]


def sub_agent_run(store: Store, config: Config, n: int) -> tuple[str, str]:
    """A sub-agent's first run, in a session of its own (so each is its lane's head)."""
    key = f"agent:main:subagent:{n:08d}-0000-0000-0000-000000000000"
    run_id = str(uuid.uuid4())
    message = Message.of("user", "task", timestamp=store.clock.now_ms(), run_id=run_id)
    new = NewRun(run_id=run_id, session_key=key, agent_id="main", kind="subagent", input=message)
    store.runs.accept(new_entry(config, key, store.clock.now_ms()), {}, new)
    return run_id, key


def gated_claim(store: Store, run: tuple[str, str], places: int = 2):
    run_id, key = run
    return store.runs.claim(
        run_id, key, owner="w", attempt=0, lease_ms=LEASE_MS, max_attempts=3, gate_places=places
    )


def test_the_sub_agent_gate_lets_so_many_run_and_the_rest_wait_their_turn_in_order(
    store: Store, config: Config, clock: FixedClock
) -> None:
    runs = [sub_agent_run(store, config, n) for n in range(5)]
    first, second = gated_claim(store, runs[0]), gated_claim(store, runs[1])
    assert (first.outcome, second.outcome) == (ClaimOutcome.CLAIMED, ClaimOutcome.CLAIMED)
    assert [gated_claim(store, run).outcome for run in runs[2:]] == [ClaimOutcome.GATED] * 3
    # A later arrival never jumps the queue, even when asked again.
    assert gated_claim(store, runs[4]).outcome is ClaimOutcome.GATED
    # The first to end frees its place for the first waiting, which the commit hands back to dispatch.
    run = store.runs.get(runs[0][0])
    assert run is not None
    message = Message.of("assistant", "done", timestamp=clock.now_ms(), run_id=run.run_id)
    committed = store.runs.commit(
        run, None, first.token, Ending(Outcome(RunStatus.OK, reply="done"), [message])
    )
    assert [(w.run_id, w.session_key) for w in committed.waiters] == [runs[2]]
    assert gated_claim(store, runs[3]).outcome is ClaimOutcome.GATED  # not its turn yet
    assert gated_claim(store, runs[2]).outcome is ClaimOutcome.CLAIMED
    # A place whose lease lapsed (its worker died) is free again.
    clock.advance(LEASE_MS / 1000 + 1)
    assert gated_claim(store, runs[3]).outcome is ClaimOutcome.CLAIMED


def test_runs_of_other_kinds_never_wait_at_the_gate(store: Store, config: Config) -> None:
    assert claim(store, accept(store, config).run_id).outcome is ClaimOutcome.CLAIMED
    run_id, key = sub_agent_run(store, config, 0)
    assert gated_claim(store, (run_id, key), places=0).outcome is ClaimOutcome.CLAIMED  # no gate


def test_the_reaper_frees_a_dead_workers_places_and_hands_on_the_runs_waiting(
    store: Store, config: Config, clock: FixedClock
) -> None:
    runs = [sub_agent_run(store, config, n) for n in range(4)]
    assert [gated_claim(store, run).outcome for run in runs] == [ClaimOutcome.CLAIMED] * 2 + [
        ClaimOutcome.GATED
    ] * 2
    assert store.runs.reap_gate(2) == []  # both places held
    clock.advance(LEASE_MS / 1000 + 1)  # the worker running the first two died: their leases lapsed
    assert [(head.run_id, head.session_key) for head in store.runs.reap_gate(2)] == runs[2:]


def test_a_run_parked_for_model_capacity_is_due_again_and_resumed_by_anyone_as_the_same_attempt(
    store: Store, config: Config
) -> None:
    accepted = accept(store, config, "wait for capacity")
    token = claim(store, accepted.run_id).token
    run = store.runs.get(accepted.run_id)
    assert run is not None
    due = store.clock.now_ms() + 5_000
    assert store.runs.park(run, token, '{"steps": 0}', due) is SuspendOutcome.SUSPENDED
    assert store.redis.zscore(store.keys.lanes_due(), KEY) == due  # the reaper's net
    resumed = claim(store, accepted.run_id, owner="the countdown's task")
    assert resumed.outcome is ClaimOutcome.CLAIMED
    assert resumed.attempts == 1  # a resumption, not a new attempt


def test_accepted_names_each_sessions_runs_of_a_kind_newest_first(store: Store, config: Config) -> None:
    chats = [accept(store, config).run_id for _ in range(3)]
    other = accept(store, config, key=OTHER).run_id
    assert store.runs.accepted([KEY, OTHER, "agent:main:none"], "chat", 2) == [chats[:0:-1], [other], []]
    assert store.runs.accepted([KEY], "send", 10) == [[]]
    found = store.runs.get_many([chats[0], "gone"])
    assert [run.run_id if run else None for run in found] == [chats[0], None]
