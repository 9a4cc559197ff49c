"""What every tool call knows: who is calling, and the ports it may use."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ToolError
from clawbus.shared.config import Config
from clawbus.shared.domain import chains, subagents
from clawbus.shared.ports.context import Context


@dataclass(frozen=True, slots=True)
class ToolContext(Context):
    caller_key: str
    # The run this call is made from (an agent's tool call), for the agent-to-agent hop limit.
    origin_run_id: str | None = None
    # Whether whoever stands behind the call may run owner-only operations (an owner API token).
    owner: bool = True
    # An agent's tool call: the runs it creates get ids derived from it, so a call repeated after a lost
    # worker finds the runs the first one made instead of making them again.
    id_seed: str | None = None
    # Every tool's name, handed in by the registry when it invokes one (a spawn names the child's tools).
    tool_names: tuple[str, ...] = ()

    @classmethod
    def for_caller(
        cls, ctx: Context, caller: str, origin_run_id: str | None = None, owner: bool = True
    ) -> ToolContext:
        """A call on ``ctx``'s ports by ``caller`` as a client wrote it (``main`` by default); raises
        SessionKeyError if malformed."""
        config = ctx.config
        key = session_keys.canonical(
            caller,
            caller_agent=config.default_agent.id,
            main_key=config.session.main_key,
            global_scope=config.global_scope,
        )
        return cls(config, ctx.store, ctx.dispatcher, key, origin_run_id, owner)

    def new_run_id(self) -> str:
        if self.id_seed is None:
            return str(uuid.uuid4())
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"clawbus:tool-call:{self.id_seed}"))

    @property
    def caller_agent(self) -> str:
        return session_keys.parse(self.caller_key).agent_id

    def display(self, session_key: str) -> str:
        return session_keys.display(
            session_key, default_agent=self.config.default_agent.id, main_key=self.config.session.main_key
        )

    def resolve(self, reference: str) -> str:
        """A ``sessionKey`` argument (key, short form, sessionId or ``current``) -> stored key."""
        value = reference.strip()
        if value == session_keys.CURRENT:
            return self.caller_key
        if session_keys.is_session_id(value):
            found = self.store.sessions.key_for_session_id(value)
            if found is None or not self.may_look_up(found):
                raise ToolError(f"Session not found: {value} (use the full sessionKey from sessions_list)")
            return found
        try:
            key = session_keys.canonical(
                value,
                caller_agent=self.caller_agent,
                main_key=self.config.session.main_key,
                global_scope=self.config.global_scope,
            )
        except session_keys.SessionKeyError as exc:
            raise ToolError(str(exc)) from None
        require_agent(self.config, key)
        return key

    def main_key_of(self, session_key: str) -> str:
        """The main session of ``session_key``'s agent."""
        agent_id = session_keys.parse(session_key).agent_id
        return session_keys.main_key_of(agent_id, self.config.session.main_key)

    @staticmethod
    def missing_session(reference: str, key: str) -> str:
        """The release's words for a session that does not exist: a key names it, anything else was
        looked up as a key and as a sessionId."""
        if looks_like_key(reference):
            return f"No session found: {key}"
        return f"Session not found: {reference.strip()} (use the full sessionKey from sessions_list)"

    def next_hop(self, run_id: str, target_key: str) -> chains.Chain:
        """The chain guards (shared/domain/chains.py): a call made outside a run starts a chain (this call's
        ``run_id``) at the caller's session; one from inside a run takes that run's chain one hop further,
        to ``target_key``, unless a guard refuses it (``ChainStopped``). OpenClaw's A->B->C->A cycles ran all
        night."""
        origin = self.store.runs.get(self.origin_run_id) if self.origin_run_id is not None else None
        here = chains.start(run_id, self.caller_key) if origin is None else chains.of_run(origin)
        return self.continue_chain(here, target_key)

    def chain_window(self) -> chains.Window | None:
        """The sends and spawns a chain may make in its window (None: not limited)."""
        a2a = self.config.session.agent_to_agent
        if not a2a.max_chain_sends:
            return None
        return chains.Window(a2a.max_chain_sends, a2a.chain_window_seconds * 1000)

    def continue_chain(self, chain: chains.Chain, target_key: str) -> chains.Chain:
        """``chain`` one hop further, to ``target_key``, under the configured guards."""
        a2a = self.config.session.agent_to_agent
        return chains.next_hop(chain, target_key, chains.Limits(a2a.max_hops, a2a.max_cycles))

    def may_look_up(self, session_key: str) -> bool:
        """A sandboxed session resolves sessionIds and labels only to the sessions it spawned (or itself):
        for anything else the id does not exist, as far as it can tell."""
        if session_key == self.caller_key or not subagents.sandboxed(
            self.config, self.caller_agent, self.caller_key
        ):
            return True
        entry = self.store.sessions.get(session_key)
        return entry is not None and entry.spawned_by == self.caller_key


def require_agent(config: Config, session_key: str) -> None:
    """Sessions belong to configured agents; a key naming any other agent is refused (the release's words)."""
    agent_id = session_keys.parse(session_key).agent_id
    if config.agent(agent_id) is None:
        raise ToolError(f'Unknown agent id "{agent_id}"')


# What the release takes for a session key rather than a name or a sessionId to look up.
_KEY_PREFIXES = ("agent:", "cron:", "hook:", "node-", "node:", "acp:")
_KEY_WORDS = frozenset({"main", "global", "unknown", "current"})


def looks_like_key(reference: str) -> bool:
    value = reference.strip().lower()
    return (
        value in _KEY_WORDS or value.startswith(_KEY_PREFIXES) or ":group:" in value or ":channel:" in value
    )
