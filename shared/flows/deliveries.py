"""One attempt at a flow's delivery: claim it, hand it to its channel adapter, record what happened.

A failed attempt never fails the send: the delivery ends ``failed`` on the flow, and that is all.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from clawbus.shared.adapters import tracing
from clawbus.shared.adapters.channels import DeliveryError, adapter_for
from clawbus.shared.base import backoff, flow_ids
from clawbus.shared.config import Config
from clawbus.shared.domain import logs, policy
from clawbus.shared.ports.storage import Storage
from clawbus.shared.ports.storage.runs import Runs
from clawbus.shared.wire.models import DeliveryClaim

log = logging.getLogger(__name__)

# How long one attempt may hold a delivery before another may take it over.
ATTEMPT_LEASE_MS = 120_000


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    # Seconds until the next attempt, when this one failed in a way a retry may fix.
    retry_in: float | None = None


def attempt(store: Storage, config: Config, flow_id: str, owner: str) -> AttemptOutcome:
    with logs.bound(flow_id=flow_id):
        return _attempt(store, config, flow_id, owner)


def _trace_of(runs: Runs, flow_id: str) -> str | None:
    """The exchange's trace (its primary run's), read only when traces are sent."""
    if not tracing.enabled():
        return None
    primary = runs.get(flow_id)
    return primary.trace_parent if primary else None


def _attempt(store: Storage, config: Config, flow_id: str, owner: str) -> AttemptOutcome:
    delivery_id = flow_ids.delivery_id(flow_id)
    claimed, attempts = store.flows.claim_delivery(delivery_id, owner=owner, lease_ms=ATTEMPT_LEASE_MS)
    if claimed is not DeliveryClaim.CLAIMED:
        return AttemptOutcome()
    delivery = store.flows.get_delivery(delivery_id)
    assert delivery is not None
    # Policy is checked again at the moment of sending: an owner may have turned the session off since.
    entry = store.sessions.get(delivery.session_key)
    if entry is not None and policy.decide(config, entry, channel=delivery.channel) == "deny":
        store.flows.finish_delivery(delivery, "blocked", policy.BLOCKED)
        return AttemptOutcome()
    try:
        with tracing.delivery(delivery.channel, flow_id, attempts, _trace_of(store.runs, flow_id)):
            adapter_for(config, store.flows, delivery.channel).send(delivery)
    except DeliveryError as exc:
        settings = config.delivery
        if exc.retryable and attempts < settings.max_attempts:
            pause = backoff.delay(attempts, settings.backoff_seconds, settings.max_backoff_seconds)
            log.warning(
                "delivery %s attempt %d failed (%s); retrying in %.1fs", delivery_id, attempts, exc, pause
            )
            store.flows.finish_delivery(delivery, "pending", str(exc))
            # The reaper looks again only after the backoff (and a margin for the retry to start).
            store.flows.update(flow_id, {}, due_in_ms=int(pause * 1000) + ATTEMPT_LEASE_MS)
            return AttemptOutcome(retry_in=pause)
        log.warning("delivery %s failed after %d attempt(s): %s", delivery_id, attempts, exc)
        store.flows.finish_delivery(delivery, "failed", str(exc))
        return AttemptOutcome()
    store.flows.finish_delivery(delivery, "delivered")
    return AttemptOutcome()
