"""Sub-agent rules (docs/contract.md §6), as pure functions: who may spawn whom, sandboxing, the sub-agent
tool set, and the normalized report (Status / Result / Notes / Stats)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from clawbus.shared.base import session_keys
from clawbus.shared.base.text import count, duration
from clawbus.shared.config import AgentSubagents, Config
from clawbus.shared.wire.models import Run, RunStatus, SessionEntry, SpawnRole, ThinkingLevel, Usage

# The release's sub-agent restriction layer (dist/agent-tools.policy-*.mjs): tools a sub-agent loses at
# any depth, whatever ``tools.subagents.tools`` allows, and those a leaf (at the depth cap) loses besides,
# so its traffic stays on the announce chain. Names clawbus has not are kept so a tool added later is
# denied from the start.
DENY_ALWAYS = (
    "gateway",
    "agents_list",
    "openclaw",
    "session_status",
    "progress_card",
    "automations",
    "message",
    "sessions_send",
    "conversations_list",
    "conversations_send",
    "conversations_turn",
)
DENY_LEAF = ("subagents", "sessions_list", "sessions_history", "sessions_search", "sessions_spawn")
# The release's old names for a tool: ``cron`` in a policy is ``automations``.
_ALIASES = {"bash": "exec", "apply-patch": "apply_patch", "cron": "automations"}
# The release's tool groups, as far as clawbus has their tools.
_GROUPS = {
    "group:sessions": (
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
        "session_status",
    ),
    "group:agents": ("agents_list",),
    "group:openclaw": (
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
        "session_status",
        "agents_list",
    ),
}
# A top-level requester's system text for its turn on a child's report (docs/contract.md §6): the report is
# internal context; what the requester says of it is what its channel gets.
RELAY_CONTEXT = (
    "Sub-agent completion: a sub-agent you spawned has finished, and its report is the message above "
    "(internal context from the sub-agent, not written by the user). Review it, then tell the user what "
    "came of the task in your own words, in your normal voice, without forwarding the raw Status / Result / "
    "Notes / Stats block. If more work is needed, say so or go on with it. If nothing needs to be said to "
    'the user, reply exactly "NO_REPLY".'
)


@dataclass(frozen=True, slots=True)
class Rules:
    """One agent's sub-agent settings: its own ``agents.list[].subagents`` over
    ``agents.defaults.subagents``. A spawn follows the spawning agent's spawn rules (who, how deep, how
    many) and the child agent's run settings (model, thinking, run timeout, archiving)."""

    allow_agents: tuple[str, ...]
    max_spawn_depth: int
    max_children: int
    require_agent_id: bool
    run_timeout_seconds: int
    archive_after_minutes: int
    model: str | None
    thinking: ThinkingLevel | None


def rules(config: Config, agent_id: str) -> Rules:
    defaults = config.agents.defaults.subagents
    agent = config.agent(agent_id)
    own = agent.subagents if agent else AgentSubagents()

    def pick(name: str) -> Any:
        value = getattr(own, name)
        return getattr(defaults, name) if value is None else value

    return Rules(
        allow_agents=tuple(pick("allow_agents") or ()),
        max_spawn_depth=pick("max_spawn_depth"),
        max_children=pick("max_children_per_agent"),
        require_agent_id=pick("require_agent_id"),
        run_timeout_seconds=pick("run_timeout_seconds"),
        archive_after_minutes=pick("archive_after_minutes"),
        model=pick("model"),
        thinking=pick("thinking"),
    )


def allowed_agents(config: Config, requester_agent: str) -> tuple[bool, list[str]]:
    """(any agent allowed, the explicitly allowed ids), from ``subagents.allowAgents``."""
    listed = [a.strip().lower() for a in rules(config, requester_agent).allow_agents if a.strip()]
    return "*" in listed, sorted({a for a in listed if a != "*"})


def may_spawn(config: Config, requester_agent: str, target_agent: str) -> bool:
    if target_agent == requester_agent:
        return True
    allow_any, allowed = allowed_agents(config, requester_agent)
    return allow_any or target_agent in allowed


def sandboxed(config: Config, agent_id: str, session_key: str) -> bool:
    """``all`` sandboxes every session of the agent, ``non-main`` every one but its main session."""
    mode = config.sandbox_mode(agent_id)
    return mode == "all" or (
        mode == "non-main" and session_keys.classify(session_key, config.session.main_key) != "main"
    )


def depth_of(entry: SessionEntry | None, session_key: str) -> int:
    """A session's spawn depth as written at its spawn (a sub-agent from before depths were written: 1)."""
    if entry is not None and entry.spawn_depth is not None:
        return entry.spawn_depth
    return 1 if session_keys.is_subagent(session_key) else 0


def role_for_depth(depth: int, max_spawn_depth: int) -> SpawnRole:
    """The release's split: below the cap a sub-agent still spawns (orchestrator); at it, a leaf."""
    return "orchestrator" if depth < max_spawn_depth else "leaf"


def role_of(config: Config, session_key: str, entry: SessionEntry | None) -> SpawnRole:
    """A sub-agent's role from its depth and its agent's ``maxSpawnDepth`` as configured now, not the
    ``role`` written at its spawn: the release derives it on every turn, so a lowered cap takes tools
    away from sessions that are already running."""
    agent_id = session_keys.parse(session_key).agent_id
    return role_for_depth(depth_of(entry, session_key), rules(config, agent_id).max_spawn_depth)


def tool_set(config: Config, all_tools: Iterable[str], role: SpawnRole | None = None) -> list[str]:
    """A sub-agent's tool set, as the release's restriction layer filters it (docs/contract.md §6): the
    hard-deny list, a leaf's list (no role: a leaf, failing closed) and ``tools.subagents.tools.deny`` are
    removed whatever allow says; ``allow`` (with ``alsoAllow``) then only narrows what is left."""
    allowed = _policy(config, "orchestrator" if role == "orchestrator" else "leaf")
    return sorted(t for t in all_tools if allowed(t))


def _policy(config: Config, role: SpawnRole) -> Callable[[str], bool]:
    configured = config.tools.subagents.tools
    deny = [*DENY_ALWAYS, *(DENY_LEAF if role == "leaf" else ()), *(configured.deny or ())]
    allow = configured.allow
    # The release merges alsoAllow into allow only when allow is set; alone it widens nothing, because
    # this layer only ever filters.
    if allow is not None and configured.also_allow is not None:
        allow = [*allow, *configured.also_allow]
    return _matcher(deny, allow)


def _matcher(deny: Iterable[str], allow: Iterable[str] | None) -> Callable[[str], bool]:
    """The release's tool-policy matcher: deny wins; an allow list with no entries restricts nothing."""
    denied = _patterns(deny)
    allowed = _patterns(allow or ())

    def matches(name: str) -> bool:
        normalized = _policy_name(name)
        if any(p.fullmatch(normalized) for p in denied):
            return False
        return not allowed or any(p.fullmatch(normalized) for p in allowed)

    return matches


def _policy_name(name: str) -> str:
    lowered = name.strip().lower()
    return _ALIASES.get(lowered, lowered)


def _patterns(entries: Iterable[str]) -> list[re.Pattern[str]]:
    """Names, ``group:`` names and ``*`` globs, as the release reads them; blank entries count for none."""
    names = [_policy_name(entry) for entry in entries]
    expanded = [member for name in names for member in _GROUPS.get(name, (name,)) if member]
    return [re.compile(".*".join(re.escape(part) for part in name.split("*"))) for name in expanded]


# --- the normalized report ----------------------------------------------------------------------------


def status_of(run: Run | None) -> str:
    """From the runtime outcome, never from what the model wrote."""
    if run is None:
        return "unknown"
    statuses = {
        RunStatus.OK: "success",
        RunStatus.ERROR: "error",
        RunStatus.TIMEOUT: "timeout",
        RunStatus.ABORTED: "aborted",  # cancelled (POST /v1/runs/{id}/cancel, /stop)
    }
    return statuses.get(run.status, "unknown")


@dataclass(frozen=True, slots=True)
class ReportInputs:
    child: Run | None
    tool_result: str | None
    session: SessionEntry | None
    transcript_path: str
    # When the child's work began (its first run's start): an orchestrator's runs span several.
    started_at: int | None = None


def normalize(inputs: ReportInputs) -> str:
    child = inputs.child
    # docs/contract.md §6: the child's latest reply, as it wrote it (the release's result); with none, its
    # latest tool result.
    final = (child.reply or "").strip() if child else ""
    result = final or (inputs.tool_result or "").strip() or "(no result)"
    notes = []
    if child is not None and child.status is not RunStatus.OK and child.error:
        notes.append(f"- Error: {child.error}")
    if child is not None and child.interrupted:
        # clawbus retries an attempt lost with its worker; the requester hears that it happened.
        notes.append(f"- {interrupted(child.interrupted)}")
    notes = notes or ["- (none)"]
    # A killed child (its tree was stopped: subagents kill, /stop) says so, whatever its run's end.
    killed = inputs.session is not None and inputs.session.killed_at is not None
    status = "killed" if killed else status_of(child)
    return "\n".join(
        [
            f"Status: {status}",
            f"Result: {result}",
            "Notes: " + "\n".join(notes),
            f"Stats: {stats(inputs)}",
        ]
    )


def interrupted(lost: int) -> str:
    """Attempts lost with their worker (each retried), as the report's notes and ``/subagents info`` say."""
    return f"Interrupted: {lost} attempt{'s' if lost != 1 else ''} lost with a worker, retried"


def stats(inputs: ReportInputs) -> str:
    """docs/contract.md §6's Stats line; ``?`` for what nothing says (no usage reported, no price)."""
    child, session = inputs.child, inputs.session
    began = inputs.started_at or (child.started_at or child.created_at if child else 0)
    runtime = duration((child.ended_at or 0) - began) if child else "?"
    usage = child.usage if child else Usage()
    tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
    if tokens_in is None and tokens_out is None:
        tokens = "tokens ?"
    else:
        known_in, known_out = tokens_in or 0, tokens_out or 0
        tokens = f"tokens {count(known_in + known_out)} (in {count(known_in)} / out {count(known_out)})"
    return " • ".join(
        [
            f"runtime {runtime}",
            tokens,
            "est ?" if usage.cost_usd is None else f"est ${usage.cost_usd:.2f}",
            f"sessionKey {session.key if session else '?'}",
            f"sessionId {session.session_id if session else '?'}",
            f"transcript {inputs.transcript_path}",
        ]
    )
