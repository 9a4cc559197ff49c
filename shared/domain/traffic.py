"""What the model traffic of the fleet is made of, without Redis: the classes calls wait in, an
admission's answer, one model's figures for the fleet view and the metrics (docs/architecture.md,
"Model traffic")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from clawbus.shared.domain.budgets import Charge
from clawbus.shared.wire.models import RunKind

# Who waits first when capacity is short: people's messages, then agent-to-agent turns and announces,
# then sub-agents' work and reports.
CLASSES: tuple[str, ...] = ("people", "agents", "background")
CLASS_OF_KIND: dict[RunKind, int] = {
    "chat": 0,
    "steer": 0,
    "collect": 0,
    "send": 1,
    "reply": 1,
    "announce": 1,
    "subagent": 2,
    "report": 2,
    "relay": 2,
    "note": 2,
}
# The admission wait histogram's bounds (ms), as the admission script counts them.
WAIT_BUCKETS_MS: tuple[int, ...] = (10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000)

WaitReason = Literal["cooldown", "requests", "tokens", "concurrent"]


@dataclass(frozen=True, slots=True)
class Admission:
    """Admitted (``ticket`` names the call until it settles), or wait ``wait_ms`` for ``reason``."""

    ticket: str | None
    waited_ms: int = 0
    wait_ms: int = 0
    reason: WaitReason | None = None
    position: int = 0


@dataclass(frozen=True, slots=True)
class CallLimits:
    """One model's limits as admission applies them (0: none)."""

    requests_per_minute: int = 0
    tokens_per_minute: int = 0
    concurrent: int = 0

    @property
    def any(self) -> bool:
        return bool(self.requests_per_minute or self.tokens_per_minute or self.concurrent)


@dataclass(frozen=True, slots=True)
class Ask:
    """One ask for a model call's admission: ``waiter``'s call of ``tokens`` (its estimate) to ``model``,
    waiting in class ``klass`` and fair-share ``flow`` with ``weight``; admitted, it holds its place in
    flight ``hold_ms`` unless settled; told to wait, it keeps its place in the queue ``grace_ms`` past the
    wait unless it asks again."""

    model: str
    waiter: str
    klass: int
    flow: str
    weight: int
    limits: CallLimits
    tokens: int
    hold_ms: int
    grace_ms: int


@dataclass(frozen=True, slots=True)
class CallEnd:
    """How an admitted call ended. ``tokens_used`` None: not known (its estimate stands); ``unsent``: it
    was never sent (it leaves the window); ``cooldown_ms``/``learned``/``rate_limited``: what the
    provider's answer taught; ``limits``: the configured ones, whose paces get back what it did not use."""

    tokens_used: int | None
    cooldown_ms: int = 0
    learned: CallLimits = CallLimits()
    rate_limited: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    unsent: bool = False
    limits: CallLimits = CallLimits()


@dataclass(frozen=True, slots=True)
class CallClose:
    """An admitted call's settling: its ``ticket`` in ``model``'s traffic, how it ended, and its spend."""

    model: str
    ticket: str
    end: CallEnd
    charge: Charge


@dataclass(slots=True)
class ModelTraffic:
    """One model's traffic now, and its counters since the deployment began."""

    model: str
    requests_in_window: int = 0
    tokens_in_window: int = 0
    in_flight: int = 0
    waiting: int = 0
    cooldown_ms: int = 0
    learned_requests_per_minute: int | None = None
    learned_tokens_per_minute: int | None = None
    admitted: dict[str, int] = field(default_factory=dict)
    throttled: dict[str, int] = field(default_factory=dict)
    waited_ms: dict[str, int] = field(default_factory=dict)
    # By class, by bucket bound (ms; ``+Inf`` last): calls admitted after that long, not cumulative.
    wait_buckets: dict[str, dict[str, int]] = field(default_factory=dict)
    rate_limited: int = 0
    cooldowns: int = 0
    cooldown_ms_total: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    holds_lapsed: int = 0
    # Admission scripts run: a call's first ask, and each ask again after a wait.
    asks: int = 0
