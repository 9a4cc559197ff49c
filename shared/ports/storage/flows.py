"""Flows: what follows a send's or a spawn's run, and their deliveries.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from clawbus.shared.wire.models import (
    Delivery,
    DeliveryClaim,
    DeliveryState,
    Flow,
    FlowEndReason,
    Snapshot,
)


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
