"""Model traffic: admission of model calls by their limits.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.domain.traffic import Admission, CallLimits, ModelTraffic


class Traffic(Protocol):
    """Model calls admitted within their model's limits, fleet-wide (``shared.store.traffic``)."""

    def admit(
        self,
        model: str,
        waiter: str,
        *,
        klass: int,
        flow: str,
        weight: int,
        limits: CallLimits,
        tokens: int,
        hold_ms: int,
        grace_ms: int,
    ) -> Admission: ...

    def settle(
        self,
        model: str,
        ticket: str,
        *,
        tokens_used: int | None,
        cooldown_ms: int = 0,
        learned: CallLimits = ...,
        rate_limited: bool = False,
        tokens_in: int = 0,
        tokens_out: int = 0,
        unsent: bool = False,
        limits: CallLimits = ...,
    ) -> None: ...

    def leave(self, model: str, waiter: str) -> None: ...

    def models(self) -> list[str]: ...

    def snapshot(self, models: list[str]) -> list[ModelTraffic]: ...
