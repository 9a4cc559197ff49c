"""shared/store/flows.py: a delivery is created once, together with its flow's pending state; a flow that is
gone is never written in part."""

from __future__ import annotations

from shared.config import Config
from shared.flows.ids import delivery_id
from shared.models import Delivery
from shared.store import Store
from tests.support.flows import stored_flow

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


def test_a_step_that_read_a_flow_before_it_was_lost_leaves_no_partial_flow(store: Store) -> None:
    """A flow lost in a failover after a step read it: the step's writes must not recreate it in part."""
    assert not store.flows.update(FLOW, {"stopReason": "no requester"}, due_in_ms=7_000)
    assert not store.flows.create_delivery(a_delivery(), due_in_ms=5_000)
    assert store.redis.exists(store.keys.flow(FLOW), store.keys.delivery(delivery_id(FLOW))) == 0
    assert store.redis.zscore(store.keys.flows_due(), FLOW) is None
