"""The flow scripts update_flow and reap_flows, through the FlowStore methods that call them (``update``,
``reap``), with what each leaves in Redis, and the edges their headers name."""

from __future__ import annotations

import json
from functools import partial

import pytest

from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.store.scripts import REPEAT_WINDOW_MS
from tests.support.flows import stored_flow
from tests.support.replies import reply_lost

FLOW = "6f1c1a9e-0000-4000-8000-0000000000aa"
LATER_FLOW = "6f1c1a9e-0000-4000-8000-0000000000bb"
PASS = "pass-1"


def grace_ms(config: Config) -> int:
    return int(config.runs.dispatch_grace_seconds * 1000)


def due_at(store: Store, flow_id: str) -> float | None:
    score: float | None = store.redis.zscore(store.keys.flows_due(), flow_id)
    return score


@pytest.fixture
def named_pass(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every call the flow store makes is named ``PASS``, so the test finds a reaper pass's kept reply."""
    monkeypatch.setattr("clawbus.shared.store.flows.call_id", lambda: PASS)
    return PASS


# -- update_flow --


def test_update_flow_without_a_next_look_sets_its_fields_and_leaves_the_reapers_schedule(
    config: Config, store: Store
) -> None:
    stored_flow(config, store, FLOW)
    store.flows.recheck(FLOW, 42)
    assert store.flows.update(FLOW, {"stopReason": "max_turns", "blockedTurn": 3})
    fields = store.redis.hgetall(store.keys.flow(FLOW))
    assert (fields["stopReason"], fields["blockedTurn"]) == ("max_turns", "3")
    assert fields["updatedAt"] == str(store.clock.now_ms())
    assert len(json.loads(fields["updateIds"])) == 1  # this call's, for a repeat to know itself
    assert due_at(store, FLOW) == 42


def test_update_flow_sent_again_after_its_reply_was_lost_keeps_a_recheck_made_meanwhile(
    config: Config, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repeat's ZADD would put the reaper's next look back a minute, past the bound set in between."""
    stored_flow(config, store, FLOW)
    now = store.clock.now_ms()
    sooner = partial(store.flows.recheck, FLOW, now + 1_000)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha, meanwhile=sooner))
    assert store.flows.update(FLOW, {"stopReason": "max_turns"}, due_in_ms=60_000)
    monkeypatch.undo()
    assert due_at(store, FLOW) == now + 1_000
    assert len(json.loads(store.redis.hget(store.keys.flow(FLOW), "updateIds") or "[]")) == 1


# -- reap_flows --


def test_reap_flows_reschedules_the_due_flows_by_the_grace_and_keeps_what_it_found(
    config: Config, store: Store, named_pass: str
) -> None:
    now = store.clock.now_ms()
    store.flows.recheck(FLOW, now)
    store.flows.recheck(LATER_FLOW, now + 60_000)
    assert store.flows.reap() == [FLOW]
    assert due_at(store, FLOW) == now + grace_ms(config)
    assert due_at(store, LATER_FLOW) == now + 60_000
    kept = store.keys.reaped_flows(named_pass)
    assert json.loads(store.redis.get(kept) or "null") == [FLOW]
    assert 0 < store.redis.pttl(kept) <= REPEAT_WINDOW_MS


def test_reap_flows_takes_the_earliest_up_to_its_limit_and_leaves_the_rest_due(store: Store) -> None:
    now = store.clock.now_ms()
    store.flows.recheck(LATER_FLOW, now - 1)
    store.flows.recheck(FLOW, now - 2)
    assert store.flows.reap(limit=1) == [FLOW]
    assert due_at(store, LATER_FLOW) == now - 1


def test_reap_flows_that_found_none_keeps_no_reply(store: Store, named_pass: str) -> None:
    store.flows.recheck(FLOW, store.clock.now_ms() + 60_000)
    assert store.flows.reap() == []
    assert store.redis.exists(store.keys.reaped_flows(named_pass)) == 0
    assert due_at(store, FLOW) == store.clock.now_ms() + 60_000


def test_reap_flows_sent_again_after_its_reply_was_lost_answers_what_it_found_and_leaves_flows_due_since(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A flow that fell due between the call and its repeat is the next pass's, not taken unreported."""
    now = store.clock.now_ms()
    store.flows.recheck(FLOW, now)
    fell_due = partial(store.flows.recheck, LATER_FLOW, now)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha, meanwhile=fell_due))
    assert store.flows.reap() == [FLOW]
    monkeypatch.undo()
    assert due_at(store, LATER_FLOW) == now
    assert store.flows.reap() == [LATER_FLOW]
