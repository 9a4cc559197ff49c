"""Fixtures shared by all tests: configs, a fakeredis-backed store, a dispatcher that records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import fakeredis
import pytest

from shared import deliveries, flows
from shared.clock import FixedClock
from shared.config import Config
from shared.execution import Attempt, AttemptResult, execute
from shared.store import Store
from shared.store.runs import LaneHead
from shared.tools import ToolContext

# Tests of everything but visibility see every session; the visibility tests set their own.
BASE_CONFIG: dict[str, Any] = {
    "agents": {"list": [{"id": "main", "default": True}, {"id": "research"}]},
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
}


def make_config(overrides: dict[str, Any] | None = None) -> Config:
    data = {**BASE_CONFIG, **(overrides or {})}
    return Config.model_validate(data)


@dataclass
class RecordingDispatcher:
    """Stands in for Celery in unit tests: remembers what would have been enqueued."""

    heads: list[LaneHead] = field(default_factory=list)
    steps: list[tuple[str, str, int | None]] = field(default_factory=list)

    def dispatch_run(self, head: LaneHead) -> None:
        self.heads.append(head)

    def reply_turn(self, flow_id: str, turn: int) -> None:
        self.steps.append(("reply_turn", flow_id, turn))

    def announce(self, flow_id: str) -> None:
        self.steps.append(("announce", flow_id, None))

    def deliver(self, flow_id: str) -> None:
        self.steps.append(("deliver", flow_id, None))

    def spawn(self, head: LaneHead) -> None:
        self.heads.append(head)  # drain_flows plays the chord: the announce follows the run

    def subagent_announce(self, flow_id: str) -> None:
        self.steps.append(("subagent_announce", flow_id, None))


def drain(store: Store, config: Config, dispatcher: RecordingDispatcher) -> list[AttemptResult]:
    """Execute the runs dispatched, in order, as a single worker would (including successors); flow steps
    are left recorded, not run (``drain_flows`` runs them)."""
    results = []
    while dispatcher.heads:
        head = dispatcher.heads.pop(0)
        result = execute(
            store, config, dispatcher, Attempt(head.run_id, head.session_key, owner="inline", attempt=0)
        )
        results.append(result)
        for woken in [result.next_head, *result.wake]:
            if woken is not None:
                dispatcher.dispatch_run(woken)
    return results


def drain_flows(store: Store, config: Config, dispatcher: RecordingDispatcher) -> list[str]:
    """Everything a worker fleet would do, inline, until nothing is left; returns the step tasks run."""
    ctx = flows.FlowContext(config, store, dispatcher)
    done: list[str] = []
    while dispatcher.heads or dispatcher.steps:
        if dispatcher.heads:
            head = dispatcher.heads.pop(0)
            result = execute(
                store, config, dispatcher, Attempt(head.run_id, head.session_key, owner="inline", attempt=0)
            )
            done.append(f"run:{head.kind}")
            for woken in [result.next_head, *result.wake]:
                if woken is not None:
                    dispatcher.dispatch_run(woken)
            if result.suspended:
                continue
            if result.flow_id and head.kind == "subagent" and not result.resumed:
                dispatcher.subagent_announce(result.flow_id)  # the link callback
            elif result.flow_id:
                flows.advance(ctx, result.flow_id)
            continue
        task, flow_id, turn = dispatcher.steps.pop(0)
        done.append(task if turn is None else f"{task}:{turn}")
        if task == "reply_turn":
            flows.advance(ctx, flow_id, performs=(flows.StartTurn,))
        elif task == "announce":
            flows.advance(ctx, flow_id, performs=(flows.StartAnnounce,))
        elif task == "subagent_announce":
            flows.advance(ctx, flow_id, performs=(flows.StartSubagentAnnounce,))
        else:
            performs = (flows.StartDelivery, flows.StartSubagentDelivery, flows.Deliver)
            action = flows.advance(ctx, flow_id, performs=performs)
            if isinstance(action, performs):
                deliveries.attempt(store, config, flow_id, owner="inline")
    return done


@pytest.fixture
def config() -> Config:
    return make_config()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def redis_client() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis(decode_responses=True)


@pytest.fixture
def store(redis_client: fakeredis.FakeRedis, config: Config, clock: FixedClock) -> Store:
    return Store(redis_client, config, clock)


@pytest.fixture
def dispatcher() -> RecordingDispatcher:
    return RecordingDispatcher()


@pytest.fixture
def ctx(config: Config, store: Store, dispatcher: RecordingDispatcher) -> ToolContext:
    return ToolContext.for_caller(config, store, dispatcher, "main")
