"""shared/domain/visibility.py through the tools: the docs/contract.md §7 matrix, each cell for list, history and send.

Callers {main session, another agent's session, a sandboxed session, a sub-agent session} x targets {self,
own child, a child it spawned under another agent, sibling, same-agent other, other agent} x visibility {self, tree, agent, all} x agentToAgent {off,
on with an allow list} x sandbox clamp {spawned, all}. The expected outcome of every cell comes from the
rules below, written from docs/contract.md §7, not from the implementation. Below the matrix, the release's
``tree`` rules one at a time (dist/session-visibility-*.mjs): the main session's reach over its agent, the
sandbox clamp that takes it away, and spawns under another agent.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import pytest

from clawbus.shared.base import session_keys
from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.domain.visibility import refusal
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.history_schema import SessionsHistoryResult
from clawbus.shared.wire.list_schema import SessionsListResult
from clawbus.shared.wire.models import ToolFailure
from clawbus.shared.wire.send_schema import SendResult
from clawbus.shared.wire.spawn_schema import SpawnResult
from clawbus.workers.testing import World
from clawbus.workers.testing import world as world_of
from tests.conftest import WorldFactory, make_config

VISIBILITIES = ("self", "tree", "agent", "all")
A2A = ("off", "on")
CLAMPS = ("spawned", "all")
TARGETS = ("self", "own child", "foreign child", "sibling", "same-agent other", "other agent")
CALLERS = ("main", "other agent", "sandboxed", "subagent")
RANK = {"self": 0, "tree": 1, "agent": 2, "all": 3}


@dataclass(frozen=True)
class MatrixWorld(World):
    """A world (``build``) with the matrix's sessions in it."""

    sessions: dict[tuple[str, str], str]  # (caller, target role) -> session key
    agents: dict[str, str]  # caller -> its agent


def spawn(w: World, parent: str, agent_id: str | None = None) -> str:
    args = {"task": "t"} | ({"agentId": agent_id} if agent_id else {})
    result = TOOLS["sessions_spawn"].invoke(w.context(parent), args)
    assert isinstance(result, SpawnResult), result
    return result.child_session_key


def touch(w: World, key: str) -> None:
    """A session exists once someone wrote in it."""
    from clawbus.shared.commands.inbound import receive
    from clawbus.shared.wire.models import InboundMessageParams

    receive(
        w.context(key),
        InboundMessageParams(message="hi", timeout_seconds=0),
    )


def build(visibility: str, a2a: str, clamp: str) -> MatrixWorld:
    tools: dict[str, Any] = {"sessions": {"visibility": visibility}, "agentToAgent": {"enabled": False}}
    if a2a == "on":
        tools["agentToAgent"] = {"enabled": True, "allow": ["main", "o*"]}  # boxed is not in the list
    config = make_config(
        {
            "tools": tools,
            "agents": {
                "defaults": {"sandbox": {"sessionToolsVisibility": clamp}},
                "list": [
                    {"id": "main", "default": True, "subagents": {"allowAgents": ["ops"]}},
                    {"id": "ops", "subagents": {"allowAgents": ["main"]}},
                    {"id": "boxed", "sandbox": {"mode": "all"}},
                ],
            },
        }
    )
    # Built once per module (the ``worlds`` fixture), so not on the per-test ``world`` fixture.
    w = world_of(config)
    for key in (
        "agent:main:main",
        "agent:main:cron:other",
        "agent:ops:main",
        "agent:ops:cron:other",
        "agent:boxed:main",
        "agent:boxed:cron:other",
    ):
        touch(w, key)
    tops = {"main": "agent:main:main", "other agent": "agent:ops:main", "sandboxed": "agent:boxed:main"}
    others = {
        "main": "agent:main:cron:other",
        "other agent": "agent:ops:cron:other",
        "sandboxed": "agent:boxed:cron:other",
    }
    foreign = {"main": "agent:ops:main", "other agent": "agent:main:main", "sandboxed": "agent:main:main"}
    sessions: dict[tuple[str, str], str] = {}
    for caller, top in tops.items():
        sessions[(caller, "self")] = top
        sessions[(caller, "own child")] = spawn(w, top)
        if caller != "sandboxed":  # a sandboxed session spawns only sandboxed children: boxed ones
            sessions[(caller, "foreign child")] = spawn(w, top, session_keys.parse(foreign[caller]).agent_id)
        sessions[(caller, "sibling")] = spawn(w, others[caller])
        sessions[(caller, "same-agent other")] = others[caller]
        sessions[(caller, "other agent")] = foreign[caller]
    sub = sessions[("main", "own child")]
    sessions[("subagent", "self")] = sub
    sessions[("subagent", "sibling")] = spawn(w, "agent:main:main")
    sessions[("subagent", "same-agent other")] = "agent:main:cron:other"
    sessions[("subagent", "other agent")] = "agent:ops:main"
    w.drain_runs()
    agents = {"main": "main", "other agent": "ops", "sandboxed": "boxed", "subagent": "main"}
    return MatrixWorld(w.config, w.store, w.dispatcher, w.clock, sessions, agents)


def expected(caller: str, target: str, visibility: str, a2a: str, clamp: str, noun: str) -> str | None:
    """None if allowed, else the refusal text docs/contract.md §7 calls for."""
    level = visibility
    # A sandboxed session sees at most its tree; the clamp only narrows, so self stays self.
    if caller == "sandboxed" and clamp == "spawned" and RANK[visibility] > RANK["tree"]:
        level = "tree"
    if target == "self":
        return None
    if level == "self":
        return f"Session {noun} visibility is restricted to the current session (tools.sessions.visibility=self)."
    if target == "own child" or (target == "foreign child" and level != "agent"):
        return None
    # Every caller here but the sub-agent is its agent's main session: under tree it reaches its agent's
    # sessions too, unless the sandbox clamp holds it to its spawns.
    main_session = caller != "subagent" and not (caller == "sandboxed" and clamp == "spawned")
    if level == "tree" and main_session and target in ("sibling", "same-agent other"):
        return None
    if level == "tree":  # a clamped sandbox gets the tree's text, as in OpenClaw
        return f"Session {noun} visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
    if target in ("sibling", "same-agent other"):
        return None
    # agent: the caller's agent id only, its own child under another agent included.
    if level == "agent":
        return (
            f"Session {noun} visibility is restricted to the current agent (tools.sessions.visibility=agent)."
        )
    if a2a == "off":
        if noun == "send":
            return "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."
        return f"Agent-to-agent {noun} access is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent {noun}."
    pair = {
        "main": ("main", "ops"),
        "other agent": ("ops", "main"),
        "sandboxed": ("boxed", "main"),
        "subagent": ("main", "ops"),
    }[caller]
    if "boxed" in pair:
        return (
            f"Agent-to-agent {noun} from {pair[0]} to {pair[1]} is not allowed by tools.agentToAgent.allow."
        )
    return None


CELLS = [
    (caller, target, visibility, a2a, clamp)
    for caller, target, visibility, a2a, clamp in itertools.product(
        CALLERS, TARGETS, VISIBILITIES, A2A, CLAMPS
    )
    # Sub-agents cannot spawn; a sandboxed session cannot spawn under an unsandboxed agent.
    if not (caller == "subagent" and target.endswith("child"))
    and not (caller == "sandboxed" and target == "foreign child")
]


def test_the_matrix_has_every_cell() -> None:
    assert len(CELLS) == 21 * 4 * 2 * 2 == 336


@pytest.fixture(scope="module")
def worlds() -> dict[tuple[str, str, str], MatrixWorld]:
    return {(v, a, c): build(v, a, c) for v, a, c in itertools.product(VISIBILITIES, A2A, CLAMPS)}


@pytest.mark.parametrize(("caller", "target", "visibility", "a2a", "clamp"), CELLS)
def test_cell(
    worlds: dict[tuple[str, str, str], MatrixWorld],
    caller: str,
    target: str,
    visibility: str,
    a2a: str,
    clamp: str,
) -> None:
    world = worlds[(visibility, a2a, clamp)]
    caller_key = world.sessions[(caller, "self")]
    target_key = world.sessions[(caller, target)]
    ctx = world.context(caller_key)

    listed = TOOLS["sessions_list"].invoke(ctx, {"limit": 200})
    assert isinstance(listed, SessionsListResult)
    shown = {world.store.sessions.key_for_session_id(row.session_id) for row in listed.sessions}
    assert (target_key in shown) is (expected(caller, target, visibility, a2a, clamp, "list") is None)

    history = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": target_key})
    refusal = expected(caller, target, visibility, a2a, clamp, "history")
    if refusal is None:
        assert isinstance(history, SessionsHistoryResult)
    else:
        assert isinstance(history, ToolFailure)
        assert (history.status, history.error) == ("forbidden", refusal)

    sent = TOOLS["sessions_send"].invoke(ctx, {"sessionKey": target_key, "message": "m", "timeoutSeconds": 0})
    refusal = expected(caller, target, visibility, a2a, clamp, "send")
    if refusal is None:
        assert isinstance(sent, SendResult)
    else:
        assert isinstance(sent, ToolFailure)
        assert (sent.status, sent.error) == ("forbidden", refusal)


def test_a_sandboxed_caller_resolves_ids_and_labels_only_to_its_children() -> None:
    world = build("all", "on", "all")
    boxed = world.context("agent:boxed:main")
    own = world.store.sessions.get(world.sessions[("sandboxed", "own child")])
    other = world.store.sessions.get("agent:boxed:cron:other")
    assert own is not None
    assert other is not None
    assert boxed.resolve(own.session_id) == own.key
    with pytest.raises(Exception, match=f"Session not found: {other.session_id}"):
        boxed.resolve(other.session_id)
    from clawbus.shared.domain.sessions import SessionPatch

    world.store.sessions.patch(other, SessionPatch({"label": "theirs"}))
    refused = TOOLS["sessions_send"].invoke(boxed, {"label": "theirs", "message": "m"})
    assert isinstance(refused, ToolFailure)
    assert refused.error == "No session found with label: theirs"


# --- tree, rule by rule ---------------------------------------------------------------------------------

TREE: dict[str, Any] = {"tools": {"sessions": {"visibility": "tree"}, "agentToAgent": {"enabled": False}}}
TREE_REFUSED = (
    "Session history visibility is restricted to the current session tree (tools.sessions.visibility=tree)."
)


def history_refusal(config: Config, caller: str, target: str, spawned_by: str | None = None) -> str | None:
    entry = new_entry(config, target, 0).model_copy(update={"spawned_by": spawned_by})
    return refusal(config, caller, target, entry, "history")


def test_tree_from_an_agents_main_session_reaches_every_session_of_that_agent() -> None:
    config = make_config(TREE)
    assert history_refusal(config, "agent:main:main", "agent:main:cron:x") is None
    assert history_refusal(config, "agent:main:main", "agent:main:subagent:x", "agent:main:cron:x") is None
    assert refusal(config, "agent:main:main", "agent:main:cron:new", None, "send") is None


def test_tree_from_any_other_session_reaches_only_what_it_spawned() -> None:
    config = make_config(TREE)
    assert history_refusal(config, "agent:main:cron:x", "agent:main:main") == TREE_REFUSED
    assert history_refusal(config, "agent:main:cron:x", "agent:main:cron:y") == TREE_REFUSED
    assert history_refusal(config, "agent:main:cron:x", "agent:main:subagent:x", "agent:main:cron:x") is None
    sub = "agent:main:subagent:parent"
    assert history_refusal(config, sub, "agent:main:subagent:sibling", "agent:main:main") == TREE_REFUSED


def test_tree_from_the_main_session_stays_closed_to_other_agents() -> None:
    config = make_config(TREE)
    assert history_refusal(config, "agent:main:main", "agent:research:cron:y") == TREE_REFUSED
    assert history_refusal(config, "agent:main:main", "agent:research:main") == TREE_REFUSED


def test_the_main_session_is_the_one_session_mainkey_names() -> None:
    config = make_config(TREE, {"session": {"mainKey": "home"}})
    assert history_refusal(config, "agent:main:home", "agent:main:cron:x") is None
    assert history_refusal(config, "agent:main:main", "agent:main:cron:x") == TREE_REFUSED


@pytest.mark.parametrize(("clamp", "reached"), [("spawned", False), ("all", True)])
def test_a_main_session_held_by_the_sandbox_clamp_reaches_only_its_spawns(clamp: str, reached: bool) -> None:
    config = make_config(
        TREE,
        {
            "agents": {
                "defaults": {"sandbox": {"sessionToolsVisibility": clamp}},
                "list": [{"id": "main", "default": True, "sandbox": {"mode": "all"}}],
            }
        },
    )
    refused = history_refusal(config, "agent:main:main", "agent:main:cron:x")
    assert refused == (None if reached else TREE_REFUSED)
    assert history_refusal(config, "agent:main:main", "agent:main:subagent:x", "agent:main:main") is None


@pytest.mark.parametrize("visibility", ["tree", "all"])
def test_a_sub_agent_spawned_under_another_agent_is_reached_without_agent_to_agent(visibility: str) -> None:
    config = make_config(TREE, {"tools": {"sessions": {"visibility": visibility}}})
    child = "agent:research:subagent:x"
    assert history_refusal(config, "agent:main:cron:x", child, "agent:main:cron:x") is None
    # Only a sub-agent: another agent's session of any other kind stays behind tools.agentToAgent.
    assert (
        history_refusal(config, "agent:main:cron:x", "agent:research:cron:y", "agent:main:cron:x") is not None
    )


def test_the_main_sessions_tree_is_listed_page_by_page_each_session_once(world: WorldFactory) -> None:
    w = world(
        TREE,
        {
            "agents": {
                "list": [
                    {"id": "main", "default": True, "subagents": {"allowAgents": ["research"]}},
                    {"id": "research"},
                ]
            }
        },
    )
    for key in ("agent:main:main", "agent:main:cron:x", "agent:research:cron:y"):
        touch(w, key)
    spawned = [
        spawn(w, "agent:main:main"),
        spawn(w, "agent:main:main", "research"),
        spawn(w, "agent:main:cron:x"),
    ]
    w.drain_runs()
    ctx = w.context("agent:main:main")
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = TOOLS["sessions_list"].invoke(ctx, {"limit": 2, "offset": offset})
        assert isinstance(page, SessionsListResult)
        seen += [str(w.store.sessions.key_for_session_id(row.session_id)) for row in page.sessions]
        offset = page.next_offset
    assert sorted(seen) == sorted(["agent:main:main", "agent:main:cron:x", *spawned])
