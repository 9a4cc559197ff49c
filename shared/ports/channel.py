"""The channel adapter protocol: deliver one message, or say whether trying again could help."""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.wire.models import Delivery


class DeliveryError(ClawbusError):
    """A delivery attempt failed; ``retryable`` says whether a later attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


class ChannelAdapter(Protocol):
    def send(self, delivery: Delivery) -> None:
        """Deliver or raise DeliveryError."""
