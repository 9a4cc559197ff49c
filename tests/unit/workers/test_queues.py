"""workers/queues.py: every kind of run has a queue a worker consumes."""

from __future__ import annotations

from typing import get_args

from clawbus.shared.wire.models import RunKind
from clawbus.workers import queues


def test_every_run_kind_has_a_queue() -> None:
    assert {queues.queue_for(kind) for kind in get_args(RunKind)} <= set(queues.ALL)
