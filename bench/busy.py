"""Figure 12: busy sessions (docs/contract.md §11). Steer latency: a message steered into a running run,
from its accept to the model request that carries it, against one model step.

Every run asks the model (the fake OpenAI-compatible server, streaming) for ``STEPS`` steps of ``STEP_S``
each. Once a run's first request reaches the model, a steer is sent to its session at a random point of
that step, through the API; the run takes it in at its next step, so the model sees it when the current
step ends. The design's bound is therefore the rest of the step: ``ideal`` per steer is the step's nominal
end (its request's arrival + ``STEP_S``) minus the accept, plus one bare Celery round trip (what a queue
hop costs with nothing of clawbus in it, measured in the same run); the worst case is one whole step.

More runs than the two workers' slots, so runs also wait in the queue while steers arrive; every steer
must be seen exactly once, in the run it was steered into.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from clawbus_client import Client
from clawbus_client.models import SendResult

from bench.report import Row, Section, Target
from bench.stack import Stack, bare_hop, clawbus_workers, model_stack
from bench.stats import percentile
from tests.support.fake_openai import FakeOpenAI, fake_openai, planned, user_texts

STEP_S = 1.0
STEPS = 4
WORKERS = 2
SLOTS_PER_WORKER = 20
TIMEOUT_S = 120.0
POLL_S = 0.01


@dataclass(frozen=True)
class Params:
    runs: int
    warmup: int
    # A model step's time (a quick run's are shorter: a steer still lands inside the run's first step).
    step_s: float = STEP_S


@dataclass(frozen=True)
class Steer:
    latency_s: float  # accepted -> the model's request carrying it arrived
    ideal_s: float  # accepted -> the step's nominal end
    seen: int  # requests that carried it as a message of the run it was steered into
    once: bool  # no request carried it twice, and no run of its own asked the model
    run_ok: bool


def config(model_url: str) -> dict[str, Any]:
    return {
        "agents": {"list": [{"id": "main", "default": True}, {"id": "gpt", "model": "fake/gpt"}]},
        "models": {"providers": {"fake": {"type": "openai", "baseUrl": model_url, "models": ["gpt"]}}},
        "worker": {"concurrency": SLOTS_PER_WORKER},
    }


def _first_request(model: FakeOpenAI, session_key: str, plan: str, deadline: float) -> float:
    """When the session's run first asked the model (monotonic, the server's clock: this process's)."""
    marker = f"Your session is {session_key}."
    while time.monotonic() < deadline:
        for body, arrived in zip(list(model.requests), list(model.arrived), strict=False):
            if marker in body["messages"][0]["content"] and user_texts(body)[:1] == [plan]:
                return arrived
        time.sleep(POLL_S)
    raise RuntimeError(f"{session_key}: its run never reached the model")


def one_steer(model: FakeOpenAI, client: Client, i: int, step_s: float) -> Steer:
    session_key = f"agent:gpt:webchat:direct:fig12-{i}"
    plan = f"plan: steps={STEPS} seconds={step_s:g}"
    sent = client.post_message(session_key, plan, timeout_seconds=0)
    assert isinstance(sent, SendResult)
    began = _first_request(model, session_key, plan, time.monotonic() + TIMEOUT_S)
    time.sleep(max(0.0, began + random.uniform(0.05, 0.95) * step_s - time.monotonic()))
    text = f"steer {i}: also cover the edge cases"
    steered = client.post_message(session_key, text, timeout_seconds=0, queue_mode="steer")
    accepted = time.monotonic()
    if not isinstance(steered, SendResult) or steered.status != "accepted":
        raise RuntimeError(f"{session_key}: the steer was not accepted: {steered}")
    run = client.wait_run(sent.run_id, timeout=TIMEOUT_S)
    carried = [
        (arrived, user_texts(body).count(text))
        for body, arrived in zip(list(model.requests), list(model.arrived), strict=False)
        if text in user_texts(body)
    ]
    if not carried:
        raise RuntimeError(f"{session_key}: the model never saw its steer")
    own_run = any(user_texts(body)[:1] == [text] for body in list(model.requests))
    return Steer(
        latency_s=carried[0][0] - accepted,
        ideal_s=began + step_s - accepted,
        seen=len(carried),
        once=all(n == 1 for _, n in carried) and not own_run,
        run_ok=run is not None and run.status == "ok",
    )


def measure(stack: Stack, params: Params) -> list[Steer]:
    with (
        fake_openai() as model,
        model_stack(stack, config(model.url)) as bound,
        clawbus_workers(bound, WORKERS),
        bound.client() as client,
    ):
        model.default = planned
        lock = threading.Lock()
        count = iter(range(params.warmup + params.runs))

        def next_steer(_: int) -> Steer:
            with lock:
                i = next(count)
            return one_steer(model, client, i, params.step_s)

        with ThreadPoolExecutor(max(params.warmup, 1)) as pool:
            list(pool.map(next_steer, range(params.warmup)))
        with ThreadPoolExecutor(params.runs) as pool:
            return list(pool.map(next_steer, range(params.runs)))


def run(stack: Stack, params: Params) -> Section:
    steers = measure(stack, params)
    hop = bare_hop(stack)
    broken = [s for s in steers if not (s.once and s.run_ok)]
    if broken:
        raise RuntimeError(f"figure 12: steers not seen exactly once, or runs not ok: {broken}")
    latency = sorted(s.latency_s for s in steers)
    ideal = sorted(s.ideal_s + hop.p50_ms / 1000 for s in steers)
    step = params.step_s + hop.p50_ms / 1000
    return Section(
        title=(
            "12. busy sessions: a steer into a running run, accepted -> seen by the model; "
            f"{params.runs} runs of {STEPS} streamed {params.step_s:g}s steps at once on {WORKERS} "
            f"workers of {SLOTS_PER_WORKER} slots"
        ),
        measured_label="clawbus",
        baseline_label="the rest of the step + a bare hop",
        rows=[
            Row(
                "accepted -> seen, p50",
                "s",
                percentile(latency, 50),
                percentile(ideal, 50),
                Target("<=", 1.2),
            ),
            Row("accepted -> seen, p99", "s", percentile(latency, 99), step, Target("<=", 1.2)),
            Row("steers seen exactly once", "steers", len(steers) - len(broken), len(steers)),
        ],
        notes=[
            f"p99 against one whole model step ({params.step_s:g}s) + a bare Celery round trip "
            f"({hop.p50_ms:.2f} ms p50): a steer waits at most for the step it arrived in",
            "each steer sent at a random point of its run's first step; seen in the requests of steps "
            f"2-{STEPS} ({sum(s.seen for s in steers)} requests carried the {len(steers)} steers, each once)",
            "a followup would wait for the whole run instead: "
            f"{STEPS - 1} more steps ({(STEPS - 1) * params.step_s:g}s) past the rest of this one",
        ],
        details={"steers": [asdict(s) for s in steers], "bare_hop": asdict(hop)},
    )
