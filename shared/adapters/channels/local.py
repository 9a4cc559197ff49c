"""Adapters that deliver inside clawbus: ``log`` (the session's outbox and the log) and ``webchat`` (an
outbox per recipient, read over the API or as server-sent events)."""

from __future__ import annotations

import logging

from clawbus.shared.domain.redaction import redact
from clawbus.shared.ports.storage import Flows
from clawbus.shared.wire.models import Delivery

log = logging.getLogger("clawbus.delivery")


def outbox_entry(delivery: Delivery) -> dict[str, str]:
    return {
        "deliveryId": delivery.delivery_id,
        "flowId": delivery.flow_id,
        "sessionKey": delivery.session_key,
        "text": delivery.text,
        "createdAt": str(delivery.created_at),
    }


class LogAdapter:
    def __init__(self, flows: Flows) -> None:
        self._flows = flows

    def send(self, delivery: Delivery) -> None:
        self._flows.append_outbox("log", delivery.session_key, delivery.delivery_id, outbox_entry(delivery))
        log.info(
            "delivery %s to %s (%s): %s",
            delivery.delivery_id,
            delivery.session_key,
            delivery.to or "-",
            redact(delivery.text)[0],
        )


class WebchatAdapter:
    def __init__(self, flows: Flows) -> None:
        self._flows = flows

    def send(self, delivery: Delivery) -> None:
        to = delivery.to or delivery.session_key
        self._flows.append_outbox("webchat", to, delivery.delivery_id, outbox_entry(delivery))
