"""Queue names and task names: the contract between whoever enqueues and whoever executes."""

from __future__ import annotations

from shared.models import RunKind

RUNS = "runs"  # chat messages and sessions_send primary runs
NESTED = "nested"  # reply-back turns and announce steps
SUBAGENT = "subagent"  # sessions_spawn children
DELIVERY = "delivery"  # outbound channel deliveries
MAINTENANCE = "maintenance"  # the reaper and sweeps
ALL = (RUNS, NESTED, SUBAGENT, DELIVERY, MAINTENANCE)

RUN_TASK = "clawbus.run"
REPLY_TURN_TASK = "clawbus.reply_turn"
ANNOUNCE_TASK = "clawbus.announce"
DELIVER_TASK = "clawbus.deliver"
SUBAGENT_ANNOUNCE_TASK = "clawbus.subagent_announce"
ARCHIVE_TASK = "clawbus.archive"
REAP_TASK = "clawbus.reap"

_RUN_QUEUES: dict[RunKind, str] = {
    "chat": RUNS,
    "send": RUNS,
    "reply": NESTED,
    "announce": NESTED,
    "subagent": SUBAGENT,
    "subagent_announce": NESTED,
    "note": NESTED,
}


def queue_for(kind: RunKind) -> str:
    return _RUN_QUEUES[kind]
