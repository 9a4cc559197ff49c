"""Budgets: spend reserved, settled and refused.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.domain.budgets import Limits, Override, Refusal, Spend


class Budgets(Protocol):
    """Spend per agent and UTC day and per sub-agent tree, and owners' runtime budgets
    (``shared.store.budgets``)."""

    def reserve(
        self,
        agent_id: str,
        day: str,
        root: str | None,
        limits: Limits,
        *,
        usd_micros: int,
        tokens: int,
        now_ms: int,
        hold: str,
        hold_ms: int,
    ) -> Refusal | None: ...

    def settle(
        self, agent_id: str, day: str, root: str | None, hold: str, *, usd_micros: int, tokens: int
    ) -> None: ...

    def spent(self, agent_ids: list[str], day: str) -> dict[str, Spend]: ...

    def tree(self, root: str) -> Spend: ...

    def trees(self, since_ms: int, limit: int = 100) -> dict[str, Spend]: ...

    def override(self, agent_id: str) -> Override: ...

    def set_override(self, agent_id: str, override: Override) -> None: ...
