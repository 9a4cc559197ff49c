"""Figure 17: model traffic across the fleet. Three worker processes of 100 threads each send runs of one
model call each to a fake provider that enforces its own limits (a 60 s window of requests and of tokens per
key; beyond them a 429 with ``Retry-After`` and ``x-ratelimit-*`` headers), as a real account does.

- **limited**: the model configured with the provider's limits; every worker admits calls within them
  together (docs/architecture.md, "Model traffic").
- **learned**: the same load with no limits configured: clawbus learns them from the provider's
  ``x-ratelimit-*`` headers after its first answers.
- **baseline**: no limits configured and a provider that states none (only its 429s' ``Retry-After``), as
  many OpenAI-compatible servers: each 429 sets the fleet's cooldown and the call waits its turn again.
- **people first**: with the limits configured, a background fan-out of sub-agents (their runs and their
  requesters' relays: two calls each) saturates the model, and chat messages sent meanwhile are timed from the
  run's start to its call reaching the provider (their admission wait).

Replies alternate between a short and a long answer (their prompt tokens as clawbus estimates them), and
the token limit is what the request limit allows at their mean reservation: which of the two binds turns
with the mix of the calls waiting, about half of the time each.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from bench.load import fan_out, posters
from bench.model_bound import _wait_all
from bench.report import Row, Section, Target
from bench.stack import Stack, clawbus_workers, model_stack
from bench.stats import percentile
from clawbus.shared.store.scripts import Scripts
from clawbus.shared.store.traffic import TrafficStore
from tests.support.fake_openai import FakeOpenAI, ProviderLimits, Reply, fake_openai, text

SUBMIT_THREADS = 16
# Completion tokens of a short and of a long answer; the model's output cap, what a call reserves of the
# token limit beyond its prompt.
SHORT, LONG = 20, 100
MAX_TOKENS = 100
# A prompt of one short question, as the gate estimates it (about four characters a token).
PROMPT_TOKENS = 30
CHAT_PROBES = 30
PROBE = "chat-probe"


@dataclass(frozen=True)
class Params:
    runs: int = 1_500
    workers: int = 3
    requests_per_minute: int = 1_200
    leaves: int = 500
    probes: int = CHAT_PROBES


@dataclass(frozen=True)
class Phase:
    runs: int
    # From the first accept to the last call's arrival at the provider, and to the last run's end.
    to_last_call_s: float
    wall_s: float
    calls_answered: int
    calls_refused: int
    failed_runs: int
    most_in_window: int
    # The gate's Redis round trips (admission asks, reservations, settlements, throttle marks) per call.
    gate_round_trips: float


def _reply(body: dict[str, Any]) -> Reply:
    asked = str(body["messages"][-1].get("content") or "")
    digits = "".join(ch for ch in asked if ch.isdigit())
    completion = LONG if digits and int(digits[-1]) % 2 else SHORT
    prompt = len(json.dumps(body["messages"])) // 4 + 1
    return text(f"done: {asked[:40]}", usage=(prompt, completion))


def _limits(params: Params, states_limits: bool = True) -> ProviderLimits:
    tokens = params.requests_per_minute * (PROMPT_TOKENS + MAX_TOKENS)
    return ProviderLimits(params.requests_per_minute, tokens, states_limits)


def config(model_url: str, params: Params, limited: bool, provider: str) -> dict[str, Any]:
    """``provider``: a name of the phase's own, so that nothing one phase leaves in the model's traffic
    state (a learned limit, a cooldown, queued waiters) reaches another phase or a later figure."""
    provider_limits = _limits(params)
    model: dict[str, Any] = {"id": "gpt", "maxTokens": MAX_TOKENS, "cost": {"input": 0.15, "output": 0.6}}
    if limited:
        model["limits"] = {
            "requestsPerMinute": provider_limits.requests_per_minute,
            "tokensPerMinute": provider_limits.tokens_per_minute,
        }
    return {
        "agents": {
            "list": [{"id": "main", "default": True, "model": f"{provider}/gpt"}],
            "defaults": {"subagents": {"maxConcurrent": 1_000, "maxChildrenPerAgent": 20}},
        },
        "models": {
            "providers": {
                provider: {"type": "openai", "baseUrl": model_url, "stream": False, "models": [model]}
            }
        },
        "tools": {"sessions": {"visibility": "agent"}},
    }


def _provider() -> str:
    return f"fig17{uuid.uuid4().hex[:6]}"


def _gate_round_trips(stack: Stack, provider: str) -> float:
    """Admission asks, plus per call a reservation and two settlements, plus per throttled call its event
    and its mark set and cleared."""
    with stack.redis() as client:
        store = TrafficStore(client, stack.keys, Scripts(client))
        figures = store.snapshot([f"{provider}/gpt"])
    asks = sum(f.asks for f in figures)
    admitted = sum(sum(f.admitted.values()) for f in figures)
    throttled = sum(sum(f.throttled.values()) for f in figures)
    return (asks + 3 * admitted + 3 * throttled) / max(admitted, 1)


def load_phase(stack: Stack, params: Params, limited: bool, states_limits: bool = True) -> Phase:
    provider = _provider()
    with (
        fake_openai(_reply, limits=_limits(params, states_limits)) as model,
        model_stack(stack, config(model.url, params, limited, provider)) as bound,
        clawbus_workers(bound, params.workers),
    ):
        tag = uuid.uuid4().hex[:6]
        started = time.monotonic()
        run_ids = _chat(bound, [f"agent:main:cron:fig17-{tag}-{i}" for i in range(params.runs)], "question")
        ended = _wait_all(bound, run_ids, timeout_s=120 + 120 * params.runs / params.requests_per_minute)
        wall = time.monotonic() - started
        return Phase(
            runs=params.runs,
            to_last_call_s=max(model.answered_at) - started,
            wall_s=wall,
            calls_answered=model.answered,
            calls_refused=model.rate_limited,
            failed_runs=sum(run["status"] != "ok" for run in ended),
            most_in_window=model.most_in_window(),
            gate_round_trips=_gate_round_trips(bound, provider),
        )


def _chat(stack: Stack, keys: list[str], word: str) -> list[str]:
    with posters(stack) as poster:

        def send(i: int) -> str:
            result = poster().post(
                f"/v1/sessions/{keys[i]}/messages", {"message": f"{word} {i}", "timeoutSeconds": 0}
            )
            if result.get("status") != "accepted":
                raise RuntimeError(f"message {i} was not accepted: {result}")
            return str(result["runId"])

        return fan_out(send, len(keys), SUBMIT_THREADS)


def people_first(stack: Stack, params: Params) -> tuple[list[float], int]:
    """Admission waits (s) of chat messages sent while a sub-agent fan-out saturates the model, and the
    fewest calls that were waiting when one was sent."""
    provider = _provider()
    with (
        fake_openai(_reply, limits=_limits(params)) as model,
        model_stack(stack, config(model.url, params, limited=True, provider=provider)) as bound,
        clawbus_workers(bound, params.workers),
    ):
        client = bound.client()
        tag = uuid.uuid4().hex[:6]
        parents = [f"agent:main:cron:fig17-lead-{tag}-{i}" for i in range(math.ceil(params.leaves / 20))]

        def spawn(i: int) -> str:
            answer = client.invoke(
                "sessions_spawn", {"task": f"leaf task {i}"}, caller=parents[i % len(parents)]
            )
            return str(answer.get("runId", "")) if isinstance(answer, dict) else ""

        for parent in parents:
            client.post_message(parent, "lead", timeout_seconds=30)
        leaves = fan_out(spawn, params.leaves, SUBMIT_THREADS)
        # Saturated: leaves wait for the model, many more than a second's worth of its calls.
        saturated = max(params.requests_per_minute // 30, 10)
        _until(lambda: _waiting(bound, provider) >= saturated, 120, "the fan-out saturating the model")
        probes = [f"agent:main:cron:fig17-probe-{tag}-{i}" for i in range(params.probes)]
        run_ids, queued = [], []
        for i, key in enumerate(probes):
            queued.append(_waiting(bound, provider))
            run_ids += _chat(bound, [key], f"{PROBE}-{i} #")
            # A chat now and then, as people write: never more than half the model's pace, so the probes
            # do not queue behind each other.
            time.sleep(max(0.2, 120 / params.requests_per_minute))
        ended = _wait_all(bound, run_ids, timeout_s=180)
        # The fan-out is stopped, not left queued: the next figure's workers share this Redis and its queues.
        for parent in parents:
            client.kill_subagent(parent, "all")
        _wait_all(bound, [leaf for leaf in leaves if leaf], timeout_s=120)
        with bound.redis() as redis_client:
            pipe = redis_client.pipeline(transaction=False)
            for run_id in run_ids:
                pipe.hget(bound.keys.run(run_id), "startedAt")
            for run, started in zip(ended, pipe.execute(), strict=True):
                run["startedAt"] = started or ""
        return sorted(_admission_waits(model, ended)), min(queued)


def _waiting(stack: Stack, provider: str) -> int:
    """Calls waiting for the model's capacity now, across the fleet."""
    with stack.redis() as client:
        store = TrafficStore(client, stack.keys, Scripts(client))
        return sum(figures.waiting for figures in store.snapshot([f"{provider}/gpt"]))


def _admission_waits(model: FakeOpenAI, ended: list[dict[str, str]]) -> list[float]:
    """From each probe run's claim to its request's arrival at the provider."""
    offset = time.time() - time.monotonic()
    arrivals: dict[str, float] = {}
    for body, at in zip(model.requests, model.arrived, strict=False):
        asked = str(body["messages"][-1].get("content") or "")
        if asked.startswith(PROBE):
            arrivals.setdefault(asked.split(" ")[0], at + offset)
    waits = []
    for run in ended:
        reply = run.get("reply") or ""
        name = reply.removeprefix("done: ").split(" ")[0]
        if name in arrivals and run.get("startedAt"):
            waits.append(max(arrivals[name] - int(run["startedAt"]) / 1000, 0.0))
    return waits


def _until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout_s:g}s")
        time.sleep(0.2)


def run(stack: Stack, params: Params) -> Section:
    limited = load_phase(stack, params, limited=True)
    learned = load_phase(stack, params, limited=False)
    baseline = load_phase(stack, params, limited=False, states_limits=False)
    waits, queued = people_first(stack, params)
    per_minute = params.requests_per_minute

    def throughput(phase: Phase) -> float:
        """Calls per minute from the first accept to the last call reaching the provider."""
        return 60 * phase.calls_answered / phase.to_last_call_s if phase.to_last_call_s else 0.0

    def refused_share(phase: Phase) -> float:
        total = phase.calls_answered + phase.calls_refused
        return 100 * phase.calls_refused / total if total else 0.0

    def summary(name: str, phase: Phase) -> str:
        return (
            f"{name}: {phase.calls_answered} calls answered, {phase.calls_refused} refused with a 429 "
            f"({refused_share(phase):.2f} %), {phase.failed_runs} runs failed, "
            f"at most {phase.most_in_window} calls in any 60 s, {phase.wall_s:.1f} s to the last run's end, "
            f"{throughput(phase) / per_minute:.2f} of the limit; the gate's Redis round trips per admitted "
            f"call {phase.gate_round_trips:.1f}"
        )

    p99 = percentile(waits, 99) if waits else float("nan")
    p50 = percentile(waits, 50) if waits else float("nan")
    tokens_per_minute = _limits(params).tokens_per_minute
    return Section(
        title=(
            f"17. model traffic: {params.workers} workers x 100 threads, {params.runs} runs of one call "
            f"against a provider limited to {per_minute} requests/min and {tokens_per_minute} tokens/min"
        ),
        measured_label="measured",
        baseline_label="reference",
        rows=[
            Row(
                "calls/min, limits configured, vs the limit",
                "calls/min",
                throughput(limited),
                per_minute,
                Target(">=", 0.95),
            ),
            Row(
                "calls/min, none configured (baseline), vs the limit",
                "calls/min",
                throughput(baseline),
                per_minute,
            ),
            Row(
                "provider 429s per call, limits vs baseline",
                "%",
                refused_share(limited),
                refused_share(baseline),
            ),
            Row("failed runs, limits vs baseline", "runs", limited.failed_runs, baseline.failed_runs),
            Row("chat admission wait p99 under a fan-out vs 2 s", "s", p99, 2.0, Target("<=", 1.0)),
        ],
        notes=[
            summary("limits configured", limited),
            summary("none configured, learned from the provider's headers", learned),
            summary("baseline: none configured, a provider that states none", baseline),
            "goals: throughput >= 0.95 of the limit, 429s <= 0.5 % of calls, no failed run",
            f"{len(waits)} chat probes during a {params.leaves}-leaf fan-out, each sent with at least "
            f"{queued} calls waiting for the model: admission wait p50 {p50:.3f} s, p99 {p99:.3f} s",
        ],
        details={
            "limited": asdict(limited),
            "learned": asdict(learned),
            "baseline": asdict(baseline),
            "chatWaits": waits,
            "waitingAtProbes": queued,
        },
    )
