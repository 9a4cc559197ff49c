"""Queue names and task names: the contract between whoever enqueues and whoever executes."""

from __future__ import annotations

from clawbus.shared.ports.dispatch import StepTask
from clawbus.shared.wire.models import RunKind

RUNS = "runs"  # chat messages and sessions_send primary runs
NESTED = "nested"  # reply-back turns and announce steps
SUBAGENT = "subagent"  # sessions_spawn children
DELIVERY = "delivery"  # outbound channel deliveries
MAINTENANCE = "maintenance"  # the reaper and sweeps
ALL = (RUNS, NESTED, SUBAGENT, DELIVERY, MAINTENANCE)

RUN_TASK = "clawbus.run"
ARCHIVE_TASK = "clawbus.archive"
REAP_TASK = "clawbus.reap"
PUSH_TASK = "clawbus.a2a_push"
# The task of each flow step, by name (which actions each performs: shared.flows.decide.PERFORMS).
STEP_TASKS: dict[StepTask, str] = {step: f"clawbus.{step.value}" for step in StepTask}
STEP_QUEUES: dict[StepTask, str] = {
    step: DELIVERY if step is StepTask.DELIVER else NESTED for step in StepTask
}

_RUN_QUEUES: dict[RunKind, str] = {
    "chat": RUNS,
    "send": RUNS,
    "reply": NESTED,
    "announce": NESTED,
    "subagent": SUBAGENT,
    "report": SUBAGENT,
    "steer": RUNS,
    "collect": RUNS,
    "note": NESTED,
    "relay": NESTED,
}


def queue_for(kind: RunKind) -> str:
    return _RUN_QUEUES[kind]
