"""Figure 11: orchestration. A tree of 1 -> 5 -> 25 (docs/contract.md §10): a top-level session spawns one
orchestrator, which spawns 5 orchestrators and yields in one step; each of them spawns 5 leaves and yields
in one step; every model step (the `script` runtime) takes 1 s. Timed from the spawn call to the one report
recorded in the top-level session's transcript, each repetition its own fresh tree, on 2 worker processes
at the defaults (threads).

The ideal is the tree's critical path of model calls, with nothing between them but the queue hops a bare
Celery design would pay (one round trip per run on the path, measured in the same run):

    top orchestrator's spawn-and-yield step                          1 s
    a depth-2 orchestrator's spawn-and-yield step                    1 s
    a leaf's step                                                    1 s
    the depth-2 orchestrator's wake step                             1 s
    the top orchestrator's wake step                                 1 s
                                                                     5 s

(a child's latest reply is its report, read with no model step of its own, as the release reads it; an
orchestrator that yielded in a step after its spawns could be outrun by a 1 s leaf, whose report would
then be a run of its own before the yield) and
6 runs on that path, a hop each: the top orchestrator's run, a depth-2 orchestrator's, a leaf's, the
depth-2 wake, the top wake, the top-level requester's turn on the report.
Every orchestrator must be woken exactly once (a run of kind ``report`` on "Your sub-agents reported"),
and every level must get each of its children's reports exactly once.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from clawbus_client import Client
from clawbus_client.models import Run

from bench.report import Row, Section
from bench.stack import Stack, bare_hop, clawbus_workers, model_stack
from bench.stats import percentile
from clawbus.shared.wire.models import Message

STEP_MS = 1000
FAN_OUT = 5
ORCHESTRATORS = 1 + FAN_OUT
LEAVES = FAN_OUT * FAN_OUT
# Model steps a tree makes: each orchestrator spawns and yields in one, and is woken; each leaf answers.
MODEL_STEPS = 2 * ORCHESTRATORS + LEAVES
CRITICAL_STEPS = 5  # the module docstring's path
HOPS = 6
# Two processes, so a tree's runs cross between workers as they do in a fleet; the machine has two cores
# and the steps are sleeps, so more would measure nothing new.
WORKERS = 2
TIMEOUT_S = 120.0
POLL_S = 0.02
WAKE_PREFIX = "Your sub-agents reported"
# Each report in a transcript (alone, or one of many in a wake's input) starts with its Status line.
STATUS_LINE = re.compile(r"^Status: (\w+)", re.MULTILINE)


@dataclass(frozen=True)
class Params:
    trees: int
    warmup: int
    hop_calls: int = 30
    hop_warmup: int = 3
    # Every model step's time (a quick run's are shorter: the tree's shape and promises are the same).
    step_ms: int = STEP_MS


@dataclass(frozen=True)
class Tree:
    seconds: float
    orchestrators: int
    leaves: int
    wakes: int
    # Reports recorded in the transcripts of each level (0: the top-level session), by Status.
    reports: dict[int, dict[str, int]]
    # Wakes per orchestrator session: each must be 1.
    wakes_per_orchestrator: list[int]
    model_steps: int
    runs_by_kind: dict[str, int]
    attempts_over_one: int
    # When each depth's runs ended last, in seconds after the spawn call: where the time went.
    level_ends_s: dict[int, float] = field(default_factory=dict)
    # From the spawn call to the top orchestrator's run starting.
    first_start_ms: float = 0.0
    # The widest spread between the first and the last child one step spawned (the step's tool calls run
    # one after another, and the parent's wake waits for the last child).
    spawn_spread_ms: float = 0.0


_YIELD: dict[str, Any] = {"name": "sessions_yield", "args": {}}


def _spawn(task: str, agent_id: str) -> dict[str, Any]:
    return {"name": "sessions_spawn", "args": {"task": task, "agentId": agent_id}}


def config(step_ms: int = STEP_MS) -> dict[str, Any]:
    """``main`` (echo) spawns ``lead``; a ``lead`` at depth 1 spawns 5 ``lead``s, each of those 5
    ``worker``s (leaves at depth 3 = maxSpawnDepth). maxConcurrent far above the 25 leaves at once, so the
    fleet's gate is not what is measured."""
    return {
        "agents": {
            "defaults": {
                "subagents": {"maxSpawnDepth": 3, "maxChildrenPerAgent": FAN_OUT, "maxConcurrent": 64}
            },
            "list": [
                {"id": "main", "default": True, "subagents": {"allowAgents": ["lead"]}},
                {"id": "lead", "model": "orchestra/lead", "subagents": {"allowAgents": ["lead", "worker"]}},
                {"id": "worker", "model": "leafy/leaf"},
            ],
        },
        "models": {
            "providers": {
                "orchestra": {
                    "type": "script",
                    "models": ["lead"],
                    "delayMs": step_ms,
                    "rules": [
                        # Spawn, then yield in the same step: the yield is in before any child can end.
                        {
                            "match": r"^\[Subagent Task\]: tree$",
                            "tools": [*[_spawn("branch", "lead")] * FAN_OUT, _YIELD],
                        },
                        {
                            "match": r"^\[Subagent Task\]: branch$",
                            "tools": [*[_spawn("leaf", "worker")] * FAN_OUT, _YIELD],
                        },
                        {"match": rf"^{WAKE_PREFIX} \({FAN_OUT}\)", "reply": "synthesized"},
                    ],
                },
                "leafy": {
                    "type": "script",
                    "models": ["leaf"],
                    "delayMs": step_ms,
                    "rules": [
                        {"match": r"^\[Subagent Task\]: leaf$", "reply": "leaf done"},
                    ],
                },
            }
        },
        "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    }


def _transcript(stack: Stack, session_key: str) -> list[tuple[int, Message]]:
    """Each message with the ms its entry was added (the stream id: when it was recorded)."""
    with stack.redis() as client:
        entries = client.xrange(stack.keys.transcript(session_key))
    return [(int(entry_id.split("-")[0]), Message.model_validate_json(f["m"])) for entry_id, f in entries]


def _reports(messages: list[tuple[int, Message]]) -> list[tuple[int, str]]:
    return [
        (at, m.text)
        for at, m in messages
        if m.role == "user" and m.provenance is not None and m.provenance.kind == "subagent_announce"
    ]


def _report_recorded(stack: Stack, session_key: str, deadline: float) -> int:
    """The ms the top-level session's report was recorded in its transcript."""
    while True:
        reports = _reports(_transcript(stack, session_key))
        if reports:
            return reports[0][0]
        if time.monotonic() > deadline:
            raise RuntimeError(f"no report in {session_key} after {TIMEOUT_S:g}s")
        time.sleep(POLL_S)


def _requester(client: Client) -> str:
    peer = f"fig11-{uuid.uuid4().hex[:8]}"
    key = f"agent:main:webchat:direct:{peer}"
    client.post_message(key, "hello", channel="webchat", to=peer, timeout_seconds=10)
    return key


def one_tree(stack: Stack, client: Client) -> Tree:
    caller = _requester(client)
    started_ms = time.time() * 1000
    spawned = client.invoke("sessions_spawn", {"task": "tree", "agentId": "lead"}, caller=caller)
    if spawned.get("status") != "accepted":
        raise RuntimeError(f"the tree's spawn was not accepted: {spawned}")
    recorded_ms = _report_recorded(stack, caller, time.monotonic() + TIMEOUT_S)
    return _count(stack, client, caller, started_ms, recorded_ms)


def _count(stack: Stack, client: Client, caller: str, started_ms: float, recorded_ms: int) -> Tree:
    """What the tree did, read back once its report is in: sessions, runs, wakes, reports per level."""
    rows = client.invoke("subagents", {"action": "list", "recursive": True}, caller=caller)["subagents"]
    depth_of = {caller: 0, **{row["key"]: int(row["depth"]) for row in rows}}
    parent_of = {row["key"]: row["spawnedBy"] for row in rows}
    created: dict[str, list[int]] = {}  # parent -> its children's first runs' creation
    first_start_ms = 0.0
    orchestrators = [row["key"] for row in rows if row.get("role") == "orchestrator"]
    reports: dict[int, Counter[str]] = {}
    runs_by_kind: Counter[str] = Counter()
    wakes_per: dict[str, int] = {key: 0 for key in orchestrators}
    level_ends: dict[int, float] = {}
    model_steps = attempts_over_one = 0
    for key, depth in depth_of.items():
        messages = _transcript(stack, key)
        for _at, text in _reports(messages):
            reports.setdefault(depth, Counter()).update(STATUS_LINE.findall(text))
        if depth == 0:
            continue  # the top-level session's own runs (its hello, the report note) are not the tree's
        # A yield's run closes with an empty assistant message of its own, which no model call wrote.
        model_steps += sum(m.role == "assistant" and bool(m.tool_calls or m.text) for _at, m in messages)
        inputs: dict[str, str] = {}
        for _at, m in messages:
            if m.run_id and m.role == "user":
                inputs.setdefault(m.run_id, m.text)
        for run_id in dict.fromkeys(m.run_id for _at, m in messages if m.run_id):
            run: Run = client.get_run(run_id)
            runs_by_kind[run.kind] += 1
            attempts_over_one += run.attempts > 1
            if run.kind == "subagent":
                created.setdefault(parent_of[key], []).append(run.created_at)
                if depth == 1 and run.started_at is not None:
                    first_start_ms = run.started_at - started_ms
            if run.kind == "report" and inputs.get(run_id, "").startswith(WAKE_PREFIX):
                wakes_per[key] = wakes_per.get(key, 0) + 1
            if run.ended_at is not None:
                level_ends[depth] = max(level_ends.get(depth, 0.0), (run.ended_at - started_ms) / 1000)
    return Tree(
        seconds=(recorded_ms - started_ms) / 1000,
        orchestrators=len(orchestrators),
        leaves=sum(row.get("role") == "leaf" for row in rows),
        wakes=sum(wakes_per.values()),
        reports={depth: dict(counts) for depth, counts in sorted(reports.items())},
        wakes_per_orchestrator=sorted(wakes_per.values()),
        model_steps=model_steps,
        runs_by_kind=dict(sorted(runs_by_kind.items())),
        attempts_over_one=attempts_over_one,
        level_ends_s=dict(sorted(level_ends.items())),
        first_start_ms=first_start_ms,
        spawn_spread_ms=float(max(max(times) - min(times) for times in created.values())),
    )


def clawbus_trees(stack: Stack, params: Params) -> list[Tree]:
    with (
        model_stack(stack, config(params.step_ms)) as bound,
        clawbus_workers(bound, WORKERS),
        bound.client() as client,
    ):
        trees = [one_tree(bound, client) for _ in range(params.warmup + params.trees)]
    return trees[params.warmup :]


def _shortfalls(tree: Tree) -> list[str]:
    """Where a tree broke the contract's promises: empty when every wake and report came once."""
    expected = {0: 1, 1: FAN_OUT, 2: LEAVES}
    wrong = []
    if (tree.orchestrators, tree.leaves) != (ORCHESTRATORS, LEAVES):
        wrong.append(f"{tree.orchestrators} orchestrators and {tree.leaves} leaves")
    if tree.wakes_per_orchestrator != [1] * ORCHESTRATORS:
        wrong.append(f"wakes per orchestrator {tree.wakes_per_orchestrator}")
    for depth, count in expected.items():
        got = tree.reports.get(depth, {})
        if got != {"success": count}:
            wrong.append(f"reports at depth {depth}: {got}, not {count} successes")
    return wrong


def run(stack: Stack, params: Params) -> Section:
    trees = clawbus_trees(stack, params)
    hop = bare_hop(stack, params.hop_calls, params.hop_warmup)
    wrong = {i: shortfalls for i, tree in enumerate(trees, 1) if (shortfalls := _shortfalls(tree))}
    if wrong:
        # The figure is meaningless for a tree that did not report as the contract says.
        raise RuntimeError(f"figure 11: trees that broke the contract: {wrong}; {[asdict(t) for t in trees]}")
    seconds = sorted(tree.seconds for tree in trees)
    p50 = percentile(seconds, 50)
    step_s = params.step_ms / 1000
    ideal = CRITICAL_STEPS * step_s + HOPS * hop.p50_ms / 1000
    wakes = sum(tree.wakes for tree in trees)
    each = ", ".join(f"{tree.seconds:.3f}" for tree in trees)
    levels = "; ".join(
        f"tree {i}: " + ", ".join(f"depth {d} {s:.2f}" for d, s in tree.level_ends_s.items())
        for i, tree in enumerate(trees, 1)
    )
    first = trees[0]
    return Section(
        title=(
            f"11. orchestration: a tree of 1 -> {FAN_OUT} -> {LEAVES} (maxSpawnDepth 3), "
            f"{step_s:g}s a model step, {WORKERS} workers at the defaults (threads), "
            f"{len(trees)} trees one after another"
        ),
        measured_label="clawbus",
        baseline_label=f"ideal: {CRITICAL_STEPS} steps on the critical path + {HOPS} bare hops",
        rows=[
            Row("spawn -> top-level report recorded, p50", "s", p50, ideal),
            Row("same, slowest tree", "s", seconds[-1], ideal),
            Row("wake-ups, all trees", "runs", wakes, ORCHESTRATORS * len(trees)),
        ],
        notes=[
            f"each tree (s): {each}; ideal {ideal:.3f}s ({CRITICAL_STEPS} x {step_s:g}s + {HOPS} x "
            f"{hop.p50_ms:.2f} ms, a bare Celery round trip's p50)",
            f"wake-ups: {', '.join(str(tree.wakes) for tree in trees)} for {ORCHESTRATORS} orchestrators "
            "a tree, each orchestrator woken exactly once",
            f"reports recorded per level (each tree): depth 0 (top-level) {first.reports[0]['success']}, "
            f"depth 1 {first.reports[1]['success']}, depth 2 {first.reports[2]['success']} "
            f"({FAN_OUT} to each orchestrator), all Status: success",
            f"model steps per tree: {', '.join(str(tree.model_steps) for tree in trees)} "
            f"(expected {MODEL_STEPS}); runs by kind: {first.runs_by_kind}; "
            f"runs retried: {sum(tree.attempts_over_one for tree in trees)}",
            f"last run ended per depth, s after the spawn: {levels}",
            "spawn call -> top orchestrator's run started (ms): "
            + ", ".join(f"{tree.first_start_ms:.0f}" for tree in trees)
            + "; widest spread of one step's 5 children created (ms): "
            + ", ".join(f"{tree.spawn_spread_ms:.0f}" for tree in trees),
        ],
        details={
            "trees": [asdict(tree) for tree in trees],
            "ideal_s": ideal,
            "bare_hop": asdict(hop),
            "critical_steps": CRITICAL_STEPS,
            "hops": HOPS,
        },
    )
