"""Why clawbus leaves a setting of the release's unused: the text ``clawbus config validate`` and start-up
print for it (``not used by clawbus: <why>``).

A path is matched by its longest pattern (``*`` stands for one key: an agent's id, a provider's name); a
setting no pattern covers gets ``DEFAULT``. Settings that configure nothing (``$schema``, ``meta``) are
never reported.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT = "clawbus has no counterpart of this OpenClaw setting"

SILENT = frozenset({"$schema", "meta"})

REASONS: dict[str, str] = {
    "plugins": "clawbus loads no OpenClaw plugins",
    "channels": "clawbus's channels are its own delivery adapters (log, webchat, webhook and the Telegram, "
    "Discord and Slack bot APIs: botToken, threadBindings); it has none for this one",
    "channels.*.*": "clawbus's Telegram, Discord and Slack adapters take botToken and threadBindings",
    "browser": "clawbus has no browser tool",
    "ui": "clawbus's console is its own (docs/console.md)",
    "wizard": "clawbus has no onboarding wizard",
    "update": "clawbus is updated as a Python package",
    "diagnostics": "clawbus's diagnostics are its metrics, logs and traces (README, Operations)",
    "logging": "clawbus's logging is logging.level and logging.format",
    "telemetry": "clawbus's telemetry is telemetry.tracing (OTLP)",
    "secrets": 'clawbus reads secrets from the file, ${VAR} substitution or {source: "env", id} refs',
    "auth": "clawbus takes provider keys from models.providers.*.apiKey, not auth profiles",
    "env": "clawbus reads the process's environment only",
    "accessGroups": "clawbus's access is its API tokens (gateway.auth.tokens)",
    "acp": "clawbus runs no ACP harness sessions",
    "nodeHost": "clawbus has no node host",
    "worktreeRoot": "clawbus makes no git worktrees",
    "worktreeAcceleration": "clawbus makes no git worktrees",
    "security": "clawbus's security is its tokens, visibility and send policy",
    "bindings": "clawbus routes a channel's message by its session key (docs/contract.md §1), not bindings",
    "broadcast": "clawbus has no agent groups",
    "attachments": "clawbus's attachments are tools.sessions_spawn.attachments",
    "tts": "clawbus speaks no text",
    "talk": "clawbus has no voice mode",
    "approvals": "clawbus's tools need no approvals: it has no exec tool",
    "cron": "clawbus runs no cron jobs",
    "transcripts": "clawbus keeps transcripts in Redis and session.store (docs/contract.md §3)",
    "hooks": "clawbus runs no hooks",
    "discovery": "clawbus announces nothing on the network",
    "cloudWorkers": "clawbus's workers are its Celery fleet (worker.*)",
    "desktop": "clawbus has no desktop app",
    "memory": "clawbus has no memory tools",
    "mcp": "clawbus serves its tools over /mcp but calls no MCP servers",
    "skills": "clawbus loads no skills",
    "surfaces": "clawbus has no silent-reply surfaces",
    "proxy": "clawbus's model calls use the environment's HTTP proxy",
    "agents.ownership": "clawbus's agents own the sessions their keys name",
    "agents.defaults": "clawbus's agent defaults are model, workspace, sandbox, subagents and budget",
    "agents.entries.*": "clawbus's agents take name, model, workspace, sandbox, subagents, tools and budget",
    "agents.entries.*.identity": "clawbus takes only identity.name (as the agent's name)",
    "agents.defaults.subagents": "clawbus does not have this sub-agent setting",
    "agents.entries.*.subagents": "clawbus does not have this sub-agent setting",
    "agents.defaults.sandbox": "clawbus's sandbox is a visibility clamp: sandbox.mode and "
    "sessionToolsVisibility; it runs no containers",
    "agents.entries.*.sandbox": "clawbus's sandbox is a visibility clamp (sandbox.mode), not a container",
    "agents.entries.*.runtime": "clawbus runs agents as its own runtimes, not ACP harnesses",
    "models": "clawbus's models are models.providers (OpenAI-compatible chat completions)",
    "models.providers.*": "clawbus calls an OpenAI-compatible endpoint with baseUrl, apiKey, headers and "
    "timeoutSeconds",
    "models.providers.*.models.*": "clawbus takes id, name, cost, reasoning, maxTokens, contextWindow, input",
    "session": "clawbus's sessions are keyed as docs/contract.md §1 says",
    "session.dmScope": "clawbus keys a chat's session by the key its channel or client names "
    "(docs/contract.md §1), not by a DM scope",
    "session.reset": "clawbus resets a session on /new and /reset only",
    "session.resetByType": "clawbus resets a session on /new and /reset only",
    "session.resetByChannel": "clawbus resets a session on /new and /reset only",
    "session.maintenance": "clawbus's retention is runs.retentionHours and session.idleArchiveDays",
    "messages": "clawbus's message settings are messages.queue",
    "messages.ackReaction": "clawbus's channel adapters post replies, not reactions",
    "messages.queue": "clawbus's queue settings are mode, byChannel, cap, drop and debounceMs",
    "tools": "clawbus's tools are the session tools (tools.sessions, agentToAgent, subagents, sessions_spawn "
    "settings)",
    "tools.profile": "clawbus's agents have the session tools only, which every profile keeps",
    "tools.allow": "clawbus's agents have the session tools only (a sub-agent's: tools.subagents.tools)",
    "tools.deny": "clawbus's agents have the session tools only (a sub-agent's: tools.subagents.tools)",
    "tools.alsoAllow": "clawbus's agents have the session tools only",
    "tools.loopDetection": "clawbus bounds a run by runs.maxSteps and an exchange by session.agentToAgent",
    "agents.entries.*.tools": "clawbus's agents have the session tools only",
    "gateway": "clawbus's gateway settings are bind, port, auth, http, tools and its own (README)",
    "gateway.auth": "clawbus always asks for a bearer token (gateway.auth.token, gateway.auth.tokens)",
    "gateway.mode": "clawbus's API always runs locally to its fleet",
    "commands": "clawbus's chat commands are configured by commands.ownerAllowFrom",
    "commands.allowFrom": "clawbus lets owners (commands.ownerAllowFrom) and a session's own sender run "
    "commands",
}


def reason(path: Sequence[str | int]) -> str:
    """Why the setting at ``path`` is not used (its longest matching pattern's text)."""
    keys = [str(part) for part in path]
    for length in range(len(keys), 0, -1):
        for pattern, text in REASONS.items():
            parts = pattern.split(".")
            if len(parts) == length and all(p in ("*", k) for p, k in zip(parts, keys, strict=False)):
                return text
    return DEFAULT
