"""Chains of agent work and the guards that keep them from running away (docs/contract.md §4, "Chains").

A chain starts with a person's message (or any call made outside a run) and follows every send and spawn
made inside its runs, across sessions, agents and hosts. Each run carries its chain's id, its hop count (the
sends and spawns on the way to it) and its path (the sessions those hops reached, the chain's first session
first). A send or spawn asks ``next_hop`` first: past ``maxHops``, or back to a session the path already
holds more than ``maxCycles`` times, it is refused, naming the guard and the path. The guards need nothing
but the run that makes the call, which the call reads anyway: they cost no Redis round trip.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.wire.models import Flow, RunSpec, ToolFailure

Guard = Literal["maxHops", "maxCycles", "maxChainSends"]
# Where a chain travels between hosts: an A2A message's metadata field (clawbus's sends to a remote A2A
# agent set it), and an HTTP header a client of the OpenAI-compatible endpoints may send.
METADATA = "clawbusChain"
HEADER = "x-clawbus-chain"
# A path longer than this from outside is cut to its latest sessions (the guards see those).
MAX_PATH = 128


@dataclass(frozen=True, slots=True)
class Chain:
    chain_id: str
    hops: int
    path: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Limits:
    max_hops: int
    max_cycles: int


class ChainStopped(ToolError):
    """A send or spawn a guard refused: ``forbidden``, with the guard and the path it would have made."""

    def __init__(self, guard: Guard, error: str, path: Sequence[str]) -> None:
        super().__init__(error, status="forbidden")
        self.guard: Guard = guard
        self.path = list(path)


def refusal(stopped: ChainStopped, run_id: str | None = None) -> ToolFailure:
    """The refused call's result: ``forbidden``, the guard, and the path the call would have made."""
    return ToolFailure(
        status="forbidden", error=stopped.error, run_id=run_id, guard=stopped.guard, path=stopped.path
    )


def encode(chain: Chain) -> dict[str, Any]:
    """A chain as it travels to another host (JSON)."""
    return {"chainId": chain.chain_id, "hops": chain.hops, "path": list(chain.path)}


def header(chain: Chain) -> str:
    """The chain as a model call sends it (``x-clawbus-chain``): its id and hops, no path (a provider is
    told no session keys). A clawbus serving that call goes on counting hops from there."""
    return json.dumps({"chainId": chain.chain_id, "hops": chain.hops, "path": []}, separators=(",", ":"))


def decode(value: object) -> Chain | None:
    """A chain another host sent (``encode``'s shape; a model call's has an empty path), or None for
    anything else: the message then starts a chain of its own, as any message from outside does."""
    if not isinstance(value, dict):
        return None
    chain_id, hops, path = value.get("chainId"), value.get("hops"), value.get("path")
    if not isinstance(chain_id, str) or not chain_id or len(chain_id) > 128:
        return None
    # JSON numbers may come back as floats (a protobuf Struct keeps no integers).
    if isinstance(hops, float) and hops.is_integer():
        hops = int(hops)
    if not isinstance(hops, int) or isinstance(hops, bool) or hops < 0:
        return None
    if not isinstance(path, list) or not all(isinstance(key, str) for key in path):
        return None
    return Chain(chain_id, hops, tuple(path[-MAX_PATH:]))


def start(run_id: str, session_key: str) -> Chain:
    """The chain a run outside any chain starts: its own id, no hop yet, its session."""
    return Chain(run_id, 0, (session_key,))


def of_run(run: RunSpec) -> Chain:
    """A run's place on its chain (a run from before paths were kept starts its path at its own session)."""
    path = tuple(run.chain_path) if run.chain_path else (run.session_key,)
    return Chain(run.chain_id or run.run_id, run.hops, path)


def next_hop(origin: Chain, target_key: str, limits: Limits) -> Chain:
    """The chain one hop further, to ``target_key``; raises ``ChainStopped`` where a guard says no."""
    path = (*origin.path, target_key)
    if origin.hops >= limits.max_hops:
        raise ChainStopped(
            "maxHops",
            f"agent-to-agent chain stopped: it already has {origin.hops} hops "
            f"(session.agentToAgent.maxHops is {limits.max_hops}); path: {shown(path)}",
            path,
        )
    visits = origin.path.count(target_key)
    if visits > limits.max_cycles:
        raise ChainStopped(
            "maxCycles",
            f"agent-to-agent chain stopped: it would come back to {short(target_key)}, already on its path "
            f"{visits} times (session.agentToAgent.maxCycles is {limits.max_cycles}); path: {shown(path)}",
            path,
        )
    return Chain(origin.chain_id, origin.hops + 1, path)


def of_flow(flow: Flow) -> Chain:
    """A send's place on its chain: the run it started (a flow from before paths were kept: the requester,
    then the target)."""
    path = tuple(flow.chain_path) if flow.chain_path else (flow.requester_key, flow.target_key)
    return Chain(flow.chain_id, flow.hops, path)


def in_session(chain: Chain, session_key: str) -> Chain:
    """The chain as a run in ``session_key`` carries it: a reply-back turn or a report in the session the
    chain came from has come back to it (no hop: nothing was sent)."""
    if chain.path and chain.path[-1] == session_key:
        return chain
    return Chain(chain.chain_id, chain.hops, (*chain.path, session_key))


def fields(chain: Chain) -> dict[str, Any]:
    """A run's chain fields (``RunSpec.chain_id``, ``hops``, ``chain_path``)."""
    return {"chain_id": chain.chain_id, "hops": chain.hops, "chain_path": list(chain.path)}


@dataclass(frozen=True, slots=True)
class Window:
    """At most ``max_sends`` sends and spawns a chain, in a window of ``window_ms`` from its first one;
    counted by the accept script, with the run it accepts (no round trip of its own)."""

    max_sends: int
    window_ms: int


def over_window(hop: Chain, window: Window) -> ChainStopped:
    """The refusal of ``hop`` (a send's or spawn's, the accept counted it and wrote nothing): its chain
    made its window's sends and spawns already."""
    return ChainStopped(
        "maxChainSends",
        f"agent-to-agent chain stopped: it already made {window.max_sends} sends and spawns within "
        f"{window.window_ms // 1000}s (session.agentToAgent.maxChainSends is {window.max_sends}); "
        f"path: {shown(hop.path)}",
        hop.path,
    )


def back_to_spawner(child: Chain) -> Chain:
    """Where a child's report puts its requester: where the requester was when it spawned the child (a
    report is no hop), so an orchestrator that spawns round after round does not use up its hops."""
    if child.hops == 0 or len(child.path) < 2:
        return child
    return Chain(child.chain_id, child.hops - 1, child.path[:-1])


def shown(path: Sequence[str]) -> str:
    return " -> ".join(short(key) for key in path)


def short(session_key: str) -> str:
    """An agent's main session by the agent's id (``main``, ``ops``), any other session (or remote agent)
    by its key."""
    try:
        parsed = session_keys.parse(session_key)
    except session_keys.SessionKeyError:
        return session_key
    return parsed.agent_id if parsed.rest == "main" else session_key
