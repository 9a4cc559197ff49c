"""One backoff for every retry in clawbus: model calls, deliveries, Redis commands."""

from __future__ import annotations

import random

# Each delay is spread by this share either way, so that clients that failed together (a Redis restart, a
# provider's outage) do not all come back at the same moment.
JITTER = 0.2


def delay(retry: int, base: float, cap: float, jitter: float = JITTER) -> float:
    """Seconds to wait before retry number ``retry`` (1 for the first): ``base``, doubled each time up to
    ``cap``, spread by ``jitter``."""
    exact = min(base * 2.0 ** (max(retry, 1) - 1), cap)
    return float(exact * random.uniform(1 - jitter, 1 + jitter))
