"""Figure 9: run control against a model that streams. A fake OpenAI-compatible server writes each answer
in chunks a fixed pause apart; one worker process at the defaults.

- Cancel -> aborted: ``runs`` runs stream at once; each is cancelled in turn through
  ``POST /v1/runs/{id}/cancel``, which answers once the run has ended. The bound is the one the run
  control promises: a running run ends within a second of its cancel. Every cancelled run must end
  ``aborted`` with the model's stream hung up on.
- Time to first text: a message posted, its run followed through ``GET /v1/runs/{id}/stream``; the time
  until the first ``text`` event reaches the client, next to the model server's own time to first token
  (request in -> first chunk out) for the same requests.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from clawbus_client.models import SendResult

from bench import model_bound
from bench.load import fan_out, posters
from bench.report import Row, Section, Target
from bench.stack import Stack, clawbus_worker, model_stack
from bench.stats import percentile
from clawbus.api.processes import wait_for
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, paced

# A model that keeps talking far longer than the figure takes: every cancel lands mid-answer.
LONG_ANSWER = "A long answer, written a few characters at a time. " * 180
LONG_SECONDS = 120.0
# The first token comes after this pause, then the rest in small chunks.
FIRST_TOKEN_S = 0.3
SHORT_ANSWER = "A short answer that streams in a few pieces."
CANCEL_BOUND_MS = 1000.0


@dataclass(frozen=True)
class Params:
    cancels: int
    first_texts: int


@dataclass(frozen=True)
class Outcome:
    cancel_ms: list[float]
    aborted: int
    hung_up: int
    first_text_ms: list[float]
    model_first_token_ms: list[float]


def measure(stack: Stack, params: Params) -> Outcome:
    with (
        fake_openai() as model,
        model_stack(stack, model_bound.config(model.url)) as bound,
        clawbus_worker(bound),
    ):
        cancel_ms, aborted = _cancels(bound, model, params.cancels)
        hung_up = len(model.hung_up)
        first_text_ms, model_ms = _first_texts(bound, model, params.first_texts)
    return Outcome(cancel_ms, aborted, hung_up, first_text_ms, model_ms)


def _cancels(stack: Stack, model: FakeOpenAI, count: int) -> tuple[list[float], int]:
    model.default = lambda _body: paced(LONG_ANSWER, LONG_SECONDS)
    tag = uuid.uuid4().hex[:6]
    with posters(stack) as poster:

        def send(i: int) -> str:
            body = {"message": f"talk {i}", "timeoutSeconds": 0}
            return str(poster().post(f"/v1/sessions/agent:gpt:cron:fig9-{tag}-{i}/messages", body)["runId"])

        run_ids = fan_out(send, count, 8)
        with stack.redis() as client:
            wait_for(
                lambda: all(_streaming(stack, client, r) for r in run_ids), 60, what="every run streaming"
            )
        seconds: list[float] = []
        statuses: list[object] = []
        for run_id in run_ids:
            started = time.perf_counter()
            statuses.append(poster().post(f"/v1/runs/{run_id}/cancel", {})["status"])
            seconds.append(time.perf_counter() - started)
    wait_for(lambda: len(model.hung_up) >= count, 10, what="the model to see every stream closed")
    return [s * 1000 for s in seconds], sum(status == "aborted" for status in statuses)


def _streaming(stack: Stack, client: Any, run_id: str) -> bool:
    return any(fields.get("type") == "text" for _id, fields in client.xrange(stack.keys.run_events(run_id)))


def _first_texts(stack: Stack, model: FakeOpenAI, count: int) -> tuple[list[float], list[float]]:
    model.default = lambda _body: Reply(text=SHORT_ANSWER, chunk_delay=FIRST_TOKEN_S)
    before = len(model.first_chunk_seconds)
    seen: list[float] = []
    with stack.client() as client:
        for i in range(count):
            started = time.perf_counter()
            key = f"agent:gpt:cron:fig9-first-{uuid.uuid4().hex[:6]}"
            sent = client.post_message(key, f"q {i}", timeout_seconds=0)
            assert isinstance(sent, SendResult)
            events = client.stream_run(sent.run_id)
            next(e for e in events if e["type"] == "text")
            seen.append((time.perf_counter() - started) * 1000)
            for _rest in events:  # to its end, so runs do not pile up on the model
                pass
    model_ms = [s * 1000 for s in model.first_chunk_seconds[before:]]
    return seen, model_ms


def run(stack: Stack, params: Params) -> Section:
    outcome = measure(stack, params)
    cancel = sorted(outcome.cancel_ms)
    first, own = sorted(outcome.first_text_ms), sorted(outcome.model_first_token_ms)
    bound = Target("<=", 1.0)
    return Section(
        title=(
            f"9. run control: {params.cancels} cancels of runs streaming from a slow model, "
            f"{params.first_texts} runs followed through /stream"
        ),
        measured_label="clawbus",
        baseline_label="bound / model's own",
        rows=[
            Row("cancel -> aborted p50", "ms", percentile(cancel, 50), CANCEL_BOUND_MS, bound),
            Row("cancel -> aborted p99", "ms", percentile(cancel, 99), CANCEL_BOUND_MS, bound),
            Row("first text event p50 vs model TTFT p50", "ms", percentile(first, 50), percentile(own, 50)),
            Row("first text event p99 vs model TTFT p99", "ms", percentile(first, 99), percentile(own, 99)),
        ],
        notes=[
            f"cancel latency is the client's: POST /cancel sent -> its answer with the run ended "
            f"(a chunk every {1000 * LONG_SECONDS / (len(LONG_ANSWER) // 4):.0f} ms from the model)",
            f"{outcome.aborted} of {params.cancels} runs ended aborted; the model saw {outcome.hung_up} "
            "streams closed before their end",
            f"first text: message posted -> first text event read from /stream; the model waits "
            f"{1000 * FIRST_TOKEN_S:.0f} ms before its first chunk",
        ],
        details={"outcome": asdict(outcome)},
    )
