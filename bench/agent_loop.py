"""Figure 6: the agent loop's own cost per model step, against the same model calls made bare.

Runs execute in this process (``shared.runner.execution.execute``, the code a worker runs) against the bench's
redis-server and a fake OpenAI-compatible server over real HTTP. Each run takes ``STEPS`` model steps
(three tool rounds of ``agents_list``, then the answer), so a step's share covers building the request
(transcript, tool schemas), the HTTP exchange and its streamed parse, the tool call, memoizing the loop
state, and the run's claim and commit amortized. The fake server's own handler time is subtracted from
both sides; what is left of the baseline is what any Python client pays for the same calls. Up to
2026-12-02 the baseline was one call answered with text, while three of a run's four steps are answered
with a tool call, whose stream is longer: about 0.3 ms a step of the figure's "own time" was the model's.

A floor is timed in the same run: the bare calls with the Redis round trips a durable run whose calls the
fleet admits cannot do without (the claim, one before each call carrying the loop state, the commit), and
no clawbus code; the figure's goal is read against it (docs/capacity.md).

The fake server runs in a process of its own, as a provider is remote: in this process its threads would
hold the GIL while the loop waits for Redis right after each answer, a cost no worker pays (up to
2026-11-27 the figure ran it in-process and counted that against the loop).
"""

from __future__ import annotations

import gc
import multiprocessing
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import httpx
import orjson
from redis import Redis
from redis.client import Pipeline

from bench.report import Row, Section
from bench.stack import Stack
from bench.stats import Latency
from clawbus.shared.base.gc_pauses import FrozenHeap, freeze_started_heap
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.ports.context import Context
from clawbus.shared.runner.execution import Attempt, execute
from clawbus.shared.runner.tool_schemas import tool_schemas
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.send_schema import SendResult
from clawbus.workers.testing import InlineDispatcher
from tests.support.fake_openai import Reply, fake_openai, text, tool

STEPS = 4


def _answer(body: dict[str, Any]) -> Reply:
    """The model of this figure: a run's first STEPS - 1 steps call ``agents_list``, its last answers; a
    request without tools answers at once."""
    if not body.get("tools"):
        return text("done: three tool rounds")
    done = sum(message.get("role") == "tool" for message in body.get("messages", []))
    return tool("agents_list") if done < STEPS - 1 else text("done: three tool rounds")


def _serve(control: Connection) -> None:
    """The fake server's process: sends its URL, then, for each ask, the handler seconds of the requests
    it answered since the last ask; ends when the control pipe closes."""
    with fake_openai(default=_answer) as server:
        control.send(server.url)
        told = 0
        while control.recv() is not None:
            control.send(server.server_seconds[told:])
            told = len(server.server_seconds)


@dataclass
class RemoteServer:
    url: str
    _control: Connection

    def handler_seconds(self) -> float:
        """The server's handler time for the requests answered since the last call."""
        self._control.send("seconds")
        return float(sum(self._control.recv()))


@contextmanager
def remote_server() -> Iterator[RemoteServer]:
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(theirs,), daemon=True)
    process.start()
    try:
        if not ours.poll(60):
            raise RuntimeError("the fake OpenAI server's process did not start")
        yield RemoteServer(ours.recv(), ours)
    finally:
        ours.send(None)
        process.join(10)
        if process.is_alive():
            process.kill()


def _config(server: RemoteServer, redis_url: str) -> Config:
    return Config.model_validate(
        {
            "agents": {"list": [{"id": "main", "default": True, "model": "fake/m"}]},
            "tools": {"sessions": {"visibility": "agent"}},
            "models": {"providers": {"fake": {"type": "openai", "baseUrl": server.url, "models": ["m"]}}},
            "redis": {"url": redis_url, "prefix": f"bench-loop-{uuid.uuid4().hex[:6]}:"},
        }
    )


@contextmanager
def worker_heap() -> Iterator[None]:
    """This process's garbage collection as a worker's (workers/signals.py): what was built by now frozen,
    then the heap after each full collection; thawed afterwards for the figures that follow."""
    freeze_started_heap()
    stop = threading.Event()
    watching = FrozenHeap().watch(stop)
    try:
        yield
    finally:
        stop.set()
        watching.join()
        gc.unfreeze()


@dataclass
class RedisTrips:
    """The Redis round trips this thread made while ``counting`` (a command or a pipeline each), and the
    time spent in them: waiting on Redis, and the client's own work on the commands and their answers."""

    count: int = 0
    seconds: float = 0.0
    counting: bool = False


@contextmanager
def redis_trips() -> Iterator[RedisTrips]:
    trips = RedisTrips()
    thread = threading.get_ident()
    command, pipeline = Redis.execute_command, Pipeline.execute

    def timed(call: Any) -> Any:
        def wrapper(*args: Any, **options: Any) -> Any:
            if not trips.counting or threading.get_ident() != thread:
                return call(*args, **options)
            started = time.perf_counter()
            try:
                return call(*args, **options)
            finally:
                trips.count += 1
                trips.seconds += time.perf_counter() - started

        return wrapper

    Redis.execute_command = timed(command)
    Pipeline.execute = timed(pipeline)
    try:
        yield trips
    finally:
        Redis.execute_command = command
        Pipeline.execute = pipeline


def clawbus_steps(
    stack: Stack, server: RemoteServer, runs: int, warmup: int, trips: RedisTrips | None = None
) -> Latency:
    config = _config(server, stack.redis_url)
    # The store's own client, as a worker's: its errors are the store's (a listener outliving the bench's
    # Redis says so quietly).
    store = Store.from_config(config)
    # Collects what a tool call would enqueue: this benchmark executes the runs itself, in order.
    dispatcher = InlineDispatcher(store.redis)
    worker = Context(config, store, dispatcher)
    operator = ToolContext.for_caller(worker, "agent:main:webchat:direct:bench")
    per_step: list[float] = []
    sessions = [f"agent:main:loop-{i}" for i in range(warmup + runs)]
    for session in sessions:  # opened as PUT /v1/sessions/{key} opens one (a send opens none), untimed
        store.sessions.create(new_entry(config, session, store.clock.now_ms()))
    with worker_heap():
        for i, session in enumerate(sessions):
            sent = TOOLS["sessions_send"].invoke(
                operator, {"sessionKey": session, "message": "go", "timeoutSeconds": 0}
            )
            assert isinstance(sent, SendResult)
            head = dispatcher.take_head()
            assert head is not None
            server.handler_seconds()
            if trips is not None:
                trips.counting = i >= warmup
            started = time.perf_counter()
            result = execute(worker, Attempt(head.run_id, head.session_key, owner="bench", attempt=0))
            elapsed = time.perf_counter() - started
            if trips is not None:
                trips.counting = False
            if result.status is None or result.status.value != "ok":
                raise RuntimeError(f"loop run {i} ended {result}")
            server_time = server.handler_seconds()
            if i >= warmup:
                per_step.append((elapsed - server_time) / STEPS)
    return Latency.of(per_step)


def _bare_bodies() -> list[dict[str, Any]]:
    """The requests of one run's STEPS steps as bare calls: the same tool schemas, and before each step the
    tool rounds of the steps before it, so the fake model answers each as it answers the run's (a tool call
    three times, then the text)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    bodies = []
    for step in range(STEPS):
        bodies.append(
            {
                "model": "m",
                "messages": list(messages),
                "tools": tool_schemas("openai"),
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
        function = {"name": "agents_list", "arguments": "{}"}
        call = {"id": f"call_{step}", "type": "function", "function": function}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": "{}"},
        ]
    return bodies


def bare_calls(server: RemoteServer, runs: int, warmup: int, redis_url: str | None = None) -> Latency:
    """Per step of a bare run: a run's STEPS requests made with httpx alone, each read to its end.

    With ``redis_url``, the floor: the least a durable run whose model calls the fleet admits can do, the
    bare calls with the Redis round trips it cannot do without, each carrying what it must: the claim,
    before each call one trip with the loop state so far (the memo; the admission would ride with it), and
    the commit."""
    bodies = _bare_bodies()
    per_step: list[float] = []
    run_key = f"bench-floor-{uuid.uuid4().hex[:6]}"
    with httpx.Client() as client, ExitStack() as held:
        redis = held.enter_context(Redis.from_url(redis_url)) if redis_url else None
        for i in range(warmup + runs):
            server.handler_seconds()
            started = time.perf_counter()
            if redis is not None:
                redis.set(f"{run_key}:claim", i)
            for body in bodies:
                if redis is not None:
                    redis.set(f"{run_key}:memo", orjson.dumps(body["messages"]))
                with client.stream("POST", f"{server.url}/chat/completions", json=body) as response:
                    for _line in response.iter_lines():
                        pass
            if redis is not None:
                redis.set(f"{run_key}:commit", i)
            elapsed = time.perf_counter() - started
            if i >= warmup:
                per_step.append((elapsed - server.handler_seconds()) / STEPS)
        if redis is not None:
            redis.delete(f"{run_key}:claim", f"{run_key}:memo", f"{run_key}:commit")
    return Latency.of(per_step)


def run(stack: Stack, runs: int, warmup: int) -> Section:
    with remote_server() as server, redis_trips() as trips:
        bare = bare_calls(server, runs, warmup)
        floor = bare_calls(server, runs, warmup, stack.redis_url)
        loop = clawbus_steps(stack, server, runs, warmup, trips)
    steps = runs * STEPS
    return Section(
        title="Figure 6: agent loop overhead per model step (fake OpenAI server's handler time excluded)",
        measured_label="clawbus step",
        baseline_label="bare HTTP call",
        rows=[
            Row("p50 per model step", "ms", loop.p50_ms, bare.p50_ms),
            Row("p95 per model step", "ms", loop.p95_ms, bare.p95_ms),
        ],
        notes=[
            f"clawbus's own time per model step (p50 step - p50 bare call): "
            f"{loop.p50_ms - bare.p50_ms:.2f} ms",
            "the floor's own time per model step (the bare calls with one Redis round trip before each, "
            f"carrying the loop state, and the claim's and commit's): {floor.p50_ms - bare.p50_ms:.2f} ms",
            f"{runs} runs of {STEPS} model steps each (3 agents_list tool rounds + the answer), executed "
            "in-process by the worker's code against the bench redis-server; the fake server, in a "
            "process of its own, streams (SSE).",
            f"of which Redis round trips: {trips.count / steps:.2f} a step (the run's claim, which reads the "
            f"transcript's tail too, and its commit included), {trips.seconds / steps * 1000:.2f} ms a step "
            "in them (the wait on Redis and the client's work on the commands)",
            "A step's share includes its tool call, memoizing the loop state, the run's claim and commit.",
            "Baseline: the same STEPS streamed POST /chat/completions with httpx alone (the same tool "
            "schemas and replies: three tool calls, then the text), each read to its end, per step.",
        ],
        details={
            "clawbus": loop.__dict__,
            "bare": bare.__dict__,
            "floor": floor.__dict__,
            "redis_trips_per_step": trips.count / steps,
            "redis_ms_per_step": trips.seconds / steps * 1000,
        },
    )
