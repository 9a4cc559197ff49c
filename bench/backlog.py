"""Figure 8: a backlog. Fire-and-forget ``sessions_send`` exchanges to sessions of a slow model, on a worker
with too few slots for them, so runs wait in the queues several times longer than a step's bound (30 s for
a fire-and-forget send). Every exchange must still reach its delivery: a step's bound counts only while its
run runs.

Each exchange is the message ``REPLY_SKIP`` from the main session to its own target session: the target's
primary run, the requester's one reply turn (which answers REPLY_SKIP and stops the loop), the target's
announce run, and the delivery.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from itertools import pairwise
from typing import Any

from clawbus_client import Client

from bench.load import fan_out, open_sessions
from bench.report import Row, Section, Target
from bench.stack import Stack, clawbus_worker, model_stack
from clawbus.shared.flows.decide import STEP_DEFAULT_S

SUBMIT_THREADS = 8


@dataclass(frozen=True)
class Params:
    sends: int
    model_seconds: float
    # Worker threads: few enough that the backlog lasts at least three step bounds.
    concurrency: int


@dataclass(frozen=True)
class Outcome:
    sends: int
    delivered: int
    ended_early: int
    seconds: float
    longest_wait_s: float


def config(model_seconds: float) -> dict[str, Any]:
    return {
        "agents": {"list": [{"id": "main", "default": True}, {"id": "slow", "model": "slow/echo"}]},
        "models": {"providers": {"slow": {"type": "echo", "delayMs": int(model_seconds * 1000)}}},
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    }


def measure(stack: Stack, params: Params) -> Outcome:
    with (
        model_stack(stack, config(params.model_seconds)) as slow,
        clawbus_worker(slow, f"--concurrency={params.concurrency}"),
        slow.client() as client,
    ):
        client.post_message("main", "hello", timeout_seconds=30)  # the requester session exists
        tag = uuid.uuid4().hex[:6]
        targets = [f"agent:slow:cron:fig8-{tag}-{i}" for i in range(params.sends)]
        open_sessions(slow, targets)  # a send opens no session
        started = time.time()

        def send(i: int) -> str:
            with slow.client() as own:
                sent = own.sessions_send(targets[i], "REPLY_SKIP", timeout_seconds=0)
            if sent.status != "accepted":
                raise RuntimeError(f"send {i} was not accepted: {sent}")
            return sent.run_id or ""

        flow_ids = fan_out(send, params.sends, SUBMIT_THREADS)
        flows = _all_done(slow, flow_ids, timeout_s=120 + 4 * params.sends * params.model_seconds)
        seconds = time.time() - started
        waits = [_queued_s(client, flow_id) for flow_id in flow_ids]
    return Outcome(
        sends=params.sends,
        delivered=sum(flow.get("deliveryStatus") == "delivered" for flow in flows),
        ended_early=sum(bool(flow.get("error")) for flow in flows),
        seconds=seconds,
        longest_wait_s=max(waits),
    )


def _all_done(stack: Stack, flow_ids: list[str], timeout_s: float) -> list[dict[str, str]]:
    deadline = time.monotonic() + timeout_s
    with stack.redis() as redis:
        while True:
            pipe = redis.pipeline(transaction=False)
            for flow_id in flow_ids:
                pipe.hgetall(stack.keys.flow(flow_id))
            flows: list[dict[str, str]] = pipe.execute()
            if all(flow.get("status") == "done" for flow in flows):
                return flows
            if time.monotonic() > deadline:
                pending = sum(flow.get("status") != "done" for flow in flows)
                raise RuntimeError(f"{pending} of {len(flow_ids)} flows not done after {timeout_s:g}s")
            time.sleep(0.5)


def _queued_s(client: Client, flow_id: str) -> float:
    """The longest a step of the flow waited for a slot: the primary run from its send to its start, the
    announce from the end of the step before it (its task was queued then) to its start."""
    flow = client.get_flow(flow_id)
    runs = [client.get_run(step.run_id) for step in flow.steps if step.run_id]
    waits = [(runs[0].started_at or runs[0].created_at) - runs[0].created_at]
    for before, after in pairwise(runs):
        if before.ended_at and after.started_at:
            waits.append(after.started_at - before.ended_at)
    return max(waits) / 1000


def run(stack: Stack, params: Params) -> Section:
    outcome = measure(stack, params)
    return Section(
        title=(
            f"8. backlog: {params.sends} fire-and-forget sessions_send to sessions of a "
            f"{params.model_seconds:g}s model, 1 worker of {params.concurrency} threads"
        ),
        measured_label="clawbus",
        baseline_label="bound, sends or ideal",
        rows=[
            Row(
                "longest wait of a step for a slot",
                "s",
                outcome.longest_wait_s,
                STEP_DEFAULT_S,
                Target(">=", 3.0),
            ),
            Row("flows that reached delivery", "flows", outcome.delivered, outcome.sends, Target(">=", 1.0)),
            # Two model calls an exchange (its primary run and its announce), every slot busy throughout.
            Row(
                "first send -> last flow done",
                "s",
                outcome.seconds,
                2 * params.sends * params.model_seconds / params.concurrency,
            ),
        ],
        notes=[
            f"all {outcome.sends} flows done after {outcome.seconds:.1f}s; "
            f"{outcome.ended_early} ended early; the step bound is {STEP_DEFAULT_S:g}s "
            "(a fire-and-forget send's), counted only while a step's run runs",
        ],
        details={"outcome": asdict(outcome)},
    )
