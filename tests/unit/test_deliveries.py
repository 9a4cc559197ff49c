"""shared/flows/deliveries.py: one attempt at a time, retries with backoff, final states on the flow."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.base.flow_ids import delivery_id
from clawbus.shared.domain.sessions import SessionPatch, new_entry
from clawbus.shared.flows import deliveries
from clawbus.shared.store import Store
from clawbus.shared.wire.models import Delivery
from clawbus.workers.testing import World
from tests.conftest import WorldFactory
from tests.support.fake_http import fake_server
from tests.support.flows import stored_flow

FLOW = "6f1c1a9e-0000-4000-8000-000000000001"


def setup(world: WorldFactory, url: str, **delivery_settings: Any) -> World:
    w = world(
        {
            "channels": {"crm": {"type": "webhook", "url": url, "secret": "0123456789"}},
            "delivery": {"backoffSeconds": 1, **delivery_settings},
        }
    )
    stored_flow(w.config, w.store, FLOW)
    w.store.flows.create_delivery(
        Delivery(
            delivery_id=delivery_id(FLOW),
            flow_id=FLOW,
            session_key="agent:main:main",
            channel="crm",
            to="x",
            text="hello",
            status="pending",
            created_at=1,
            updated_at=1,
        ),
        due_in_ms=60_000,
    )
    return w


def state(store: Store) -> tuple[str, int, str | None, str | None]:
    delivery = store.flows.get_delivery(delivery_id(FLOW))
    flow = store.flows.get(FLOW)
    assert delivery is not None
    assert flow is not None
    return delivery.status, delivery.attempts, flow.delivery_status, delivery.last_error


def test_retries_on_500_with_backoff_then_succeeds(world: WorldFactory) -> None:
    with fake_server((500, {}), (500, {}), (200, {})) as receiver:
        w = setup(world, receiver.url)
        delays = [deliveries.attempt(w.store, w.config, FLOW, "t").retry_in for _ in range(3)]
    # One second, then twice that, each spread by the backoff's jitter.
    assert delays[2] is None
    assert 0.8 <= (delays[0] or 0) <= 1.2
    assert 1.6 <= (delays[1] or 0) <= 2.4
    assert state(w.store)[:3] == ("delivered", 3, "delivered")
    assert len(receiver.requests) == 3
    assert w.store.redis.zscore(w.store.keys.flows_due(), FLOW) is None


def test_a_permanent_4xx_fails_without_retry(world: WorldFactory) -> None:
    with fake_server((400, {"error": "bad"})) as receiver:
        w = setup(world, receiver.url)
        outcome = deliveries.attempt(w.store, w.config, FLOW, "t")
    assert outcome.retry_in is None
    status, attempts, flow_status, error = state(w.store)
    assert (status, attempts, flow_status) == ("failed", 1, "failed")
    assert error is not None
    assert "HTTP 400" in error


def test_retries_stop_at_max_attempts(world: WorldFactory) -> None:
    with fake_server((503, {})) as receiver:
        w = setup(world, receiver.url, maxAttempts=2)
        outcomes = [deliveries.attempt(w.store, w.config, FLOW, "t").retry_in for _ in range(3)]
    assert outcomes[1:] == [None, None]
    assert 0.8 <= (outcomes[0] or 0) <= 1.2
    assert state(w.store)[:3] == ("failed", 2, "failed")
    assert len(receiver.requests) == 2


def test_a_delivered_message_is_never_sent_again(world: WorldFactory) -> None:
    with fake_server((200, {})) as receiver:
        w = setup(world, receiver.url)
        for _ in range(3):
            deliveries.attempt(w.store, w.config, FLOW, "t")
    assert len(receiver.requests) == 1


def test_an_attempt_in_flight_is_not_doubled(world: WorldFactory) -> None:
    with fake_server((200, {})) as receiver:
        w = setup(world, receiver.url)
        w.store.flows.claim_delivery(delivery_id(FLOW), owner="other", lease_ms=60_000)
        deliveries.attempt(w.store, w.config, FLOW, "t")
    assert receiver.requests == []


@pytest.mark.parametrize("override", ["deny"])
def test_a_session_turned_off_before_sending_blocks_the_delivery(override: str, world: WorldFactory) -> None:
    with fake_server((200, {})) as receiver:
        w = setup(world, receiver.url)
        entry = new_entry(w.config, "agent:main:main", 1)
        w.store.sessions.create(entry)
        w.store.sessions.patch(entry, SessionPatch({"sendPolicy": override}))
        deliveries.attempt(w.store, w.config, FLOW, "t")
    assert state(w.store)[0] == "blocked"
    assert receiver.requests == []
