"""shared/store/flows.py: a delivery is created once, together with its flow's pending state; a flow that is
gone is never written in part; a script call sent again after its reply was lost answers as the first did."""

from __future__ import annotations

import json
from functools import partial

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.base.flow_ids import delivery_id
from clawbus.shared.config import Config
from clawbus.shared.store import Store
from clawbus.shared.store.flows import UPDATES_KEPT
from clawbus.shared.wire.models import Delivery, DeliveryClaim
from tests.support.flows import stored_flow
from tests.support.replies import reply_lost

FLOW = "6f1c1a9e-0000-4000-8000-0000000000aa"


def a_delivery() -> Delivery:
    return Delivery(
        delivery_id=delivery_id(FLOW),
        flow_id=FLOW,
        session_key="agent:main:main",
        channel="log",
        text="hello",
        status="pending",
        created_at=1,
        updated_at=1,
    )


def test_creating_a_delivery_marks_its_flow_pending_and_puts_it_on_the_reapers_schedule(
    config: Config, store: Store
) -> None:
    stored_flow(config, store, FLOW)
    assert store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    assert store.redis.hget(store.keys.flow(FLOW), "deliveryStatus") == "pending"
    assert store.redis.zscore(store.keys.flows_due(), FLOW) == store.clock.now_ms() + 5_000


def test_a_repeated_create_changes_nothing_once_the_delivery_has_ended(config: Config, store: Store) -> None:
    stored_flow(config, store, FLOW)
    store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    store.flows.finish_delivery(a_delivery(), "delivered")
    assert not store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    assert store.redis.hget(store.keys.flow(FLOW), "deliveryStatus") == "delivered"
    assert store.redis.hget(store.keys.delivery(delivery_id(FLOW)), "status") == "delivered"


def test_a_recovery_reap_advances_every_flow_in_progress_at_once(config: Config, store: Store) -> None:
    stored_flow(config, store, FLOW)
    store.flows.create_delivery(a_delivery(), due_in_ms=60_000)
    assert store.flows.reap() == []  # not due for a minute
    assert store.flows.reap(everything=True) == [FLOW]


def test_an_update_sets_fields_and_the_reapers_next_look(config: Config, store: Store) -> None:
    stored_flow(config, store, FLOW)
    assert store.flows.update(FLOW, {"stopReason": "max_turns"}, due_in_ms=7_000)
    flow = store.flows.get(FLOW)
    assert flow is not None
    assert (flow.stop_reason, flow.updated_at) == ("max_turns", store.clock.now_ms())
    assert store.redis.zscore(store.keys.flows_due(), FLOW) == store.clock.now_ms() + 7_000


def test_an_update_sent_again_after_its_reply_was_lost_keeps_an_update_made_meanwhile(
    config: Config, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repeat wrote its fields again over the newer ones: an orchestrator's flow went back to an older
    report run, ended already, and would report before the newer one was done."""
    stored_flow(config, store, FLOW)
    newer = partial(store.flows.update, FLOW, {"lastRunId": "report-2"})
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha, meanwhile=newer))
    assert store.flows.update(FLOW, {"lastRunId": "report-1"})
    monkeypatch.undo()
    flow = store.flows.get(FLOW)
    assert flow is not None
    assert flow.last_run_id == "report-2"


def test_a_flow_keeps_the_ids_of_its_last_updates_only(config: Config, store: Store) -> None:
    stored_flow(config, store, FLOW)
    for turn in range(UPDATES_KEPT + 3):
        assert store.flows.update(FLOW, {"blockedTurn": turn})
    assert len(json.loads(store.redis.hget(store.keys.flow(FLOW), "updateIds") or "[]")) == UPDATES_KEPT


def test_a_step_that_read_a_flow_before_it_was_lost_leaves_no_partial_flow(store: Store) -> None:
    """A flow lost in a failover after a step read it: the step's writes must not recreate it in part."""
    assert not store.flows.update(FLOW, {"stopReason": "no requester"}, due_in_ms=7_000)
    assert not store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    assert store.redis.exists(store.keys.flow(FLOW), store.keys.delivery(delivery_id(FLOW))) == 0
    assert store.redis.zscore(store.keys.flows_due(), FLOW) is None


def test_an_end_sent_again_after_its_reply_was_lost_still_ended_the_flow_here(
    config: Config, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel that took the repeat's 0 for someone else's end left the flow's runs running."""
    stored_flow(config, store, FLOW)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    assert store.flows.end(FLOW, "canceled", {"stopReason": "canceled"})
    monkeypatch.undo()
    assert store.redis.hget(store.keys.metrics_flows_ended(), "canceled") == "1"  # counted once
    # Another end is not a repeat of this one: the flow had already ended.
    assert not store.flows.end(FLOW, "canceled", {"stopReason": "canceled"})


def test_a_reap_sent_again_after_its_reply_was_lost_still_finds_the_due_flows(
    config: Config, store: Store, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call rescheduled them: the repeat found none, and they waited for the next pass."""
    stored_flow(config, store, FLOW)
    store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    clock.advance(5)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    assert store.flows.reap() == [FLOW]
    monkeypatch.undo()
    assert store.flows.reap() == []  # rescheduled by the grace, as after any pass


def test_a_delivery_claim_sent_again_after_its_reply_was_lost_counts_one_attempt(
    config: Config, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repeat counted a second attempt, and the delivery could fail one attempt early."""
    stored_flow(config, store, FLOW)
    store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    claimed = store.flows.claim_delivery(delivery_id(FLOW), owner="task-1", lease_ms=60_000)
    monkeypatch.undo()
    assert claimed == (DeliveryClaim.CLAIMED, 1)
    # The same owner's task delivered again is another attempt, and anyone else is still kept out.
    assert store.flows.claim_delivery(delivery_id(FLOW), owner="task-1", lease_ms=60_000) == (
        DeliveryClaim.CLAIMED,
        2,
    )
    assert store.flows.claim_delivery(delivery_id(FLOW), owner="task-2", lease_ms=60_000) == (
        DeliveryClaim.BUSY,
        0,
    )


def test_a_delivery_is_appended_to_its_outbox_once_however_often_it_is_sent(
    config: Config, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A retried attempt (its worker died after the append) or the call repeated after a lost reply: the
    recipient still reads the message once."""
    stored_flow(config, store, FLOW)
    store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    entry = {"deliveryId": delivery_id(FLOW), "text": "hello"}
    monkeypatch.setattr(store.redis, "evalsha", reply_lost(store.redis.evalsha))
    first = store.flows.append_outbox("webchat", "ann", delivery_id(FLOW), entry)
    monkeypatch.undo()
    assert store.flows.append_outbox("webchat", "ann", delivery_id(FLOW), entry) == first
    assert store.flows.read_outbox("webchat", "ann") == [(first, entry)]
