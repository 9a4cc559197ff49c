"""Every Lua script call made twice, as redis-py's retry makes a call whose reply was lost with its
connection (docs/architecture.md, "Reliability"): a reply-back exchange, a spawn's report and an
orchestration end exactly as they end when no reply is lost. A superset of what a Redis killed mid-load
does (there, only the calls in flight are repeated), on every script of the run's path at once."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from clawbus.shared.commands.inbound import receive
from clawbus.shared.store import scripts
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import InboundMessageParams, RunStatus
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World, world
from tests.support.replies import reply_lost
from tests.support.sessions import open_sessions
from tests.support.world_orchestra import MAIN, runs_of, spawn_orchestrator
from tests.support.world_orchestra import config as orchestra_config

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
REQUESTER = "agent:main:webchat:direct:ann"
TARGET = "agent:research:cron:job"
EXCHANGE = {
    "session": {"agentToAgent": {"maxPingPongTurns": 2}},
    "tools": {"sessions": {"visibility": "all"}, "agentToAgent": {"enabled": True}},
    "agents": {"list": [{"id": "main", "default": True}, {"id": "research"}]},
}


def repeating(monkeypatch: pytest.MonkeyPatch, w: World) -> None:
    """From now on every script call of ``w`` runs twice, and its caller sees the second answer."""
    monkeypatch.setattr(w.store.redis, "evalsha", reply_lost(w.store.redis.evalsha))
    monkeypatch.setattr(scripts, "_send", reply_lost(scripts._send))  # pipelined calls (a commit)


def outcome(w: World, keys: Callable[[World], list[str]]) -> list[Any]:
    """What a user sees, without the ids that differ between worlds: each session's transcript (role,
    text) and its runs (kind, status), in order."""
    seen: list[Any] = []
    for key in keys(w):
        seen.append([(m.role, UUID.sub("<id>", m.text)) for m in w.store.transcripts.all(key)])
        seen.append([(run.kind, run.status) for run in runs_of(w, key) if run])
    return seen


def an_exchange(w: World) -> None:
    ctx = w.context(REQUESTER)
    # Someone wrote in the requester's session first: it has a route, so reply turns come back to it.
    said = receive(ctx, InboundMessageParams.model_validate({"message": "hello", "timeoutSeconds": 0}))
    assert isinstance(said, SendResult), said
    open_sessions(w.store, w.config, TARGET)  # a send opens no session
    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": TARGET, "message": "ping", "timeoutSeconds": 0})
    assert isinstance(sent, SendResult), sent
    w.drain()


def a_spawn(w: World) -> None:
    ctx = w.context(REQUESTER)
    spawned = TOOLS["sessions_spawn"].invoke(ctx, {"task": "count to three", "label": "counter"})
    assert isinstance(spawned, SpawnResult), spawned
    w.drain(follow_inline=True)


def an_orchestration(w: World) -> None:
    spawn_orchestrator(w)
    w.drain(follow_inline=True)


def exchange_sessions(w: World) -> list[str]:
    return [REQUESTER, TARGET]


def spawn_sessions(w: World) -> list[str]:
    return [REQUESTER, *w.store.sessions.children(REQUESTER)]


def orchestra_sessions(w: World) -> list[str]:
    [boss] = w.store.sessions.children(MAIN)
    return [MAIN, boss, *sorted(w.store.sessions.children(boss), key=lambda k: str(w.store.sessions.get(k)))]


SCENARIOS = {
    "exchange": (EXCHANGE, an_exchange, exchange_sessions),
    "spawn": (EXCHANGE, a_spawn, spawn_sessions),
    "orchestration": (orchestra_config(), an_orchestration, orchestra_sessions),
}


@pytest.fixture(params=SCENARIOS)
def scenario(request: pytest.FixtureRequest) -> tuple[Any, ...]:
    return SCENARIOS[request.param]


def test_a_flow_with_every_script_call_repeated_ends_as_it_does_without(
    scenario: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, act, keys = scenario
    plain = world(settings)
    act(plain)
    expected = outcome(plain, keys)
    assert expected[1]  # the scenario ran, and ran well
    assert all(status is RunStatus.OK for _kind, status in expected[1])

    repeated = world(settings)
    repeating(monkeypatch, repeated)
    act(repeated)
    monkeypatch.undo()
    assert outcome(repeated, keys) == expected
