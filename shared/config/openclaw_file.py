"""An ``openclaw.json`` read as clawbus's configuration: what the release accepts is taken, each setting
honoured or reported as not used, and what the release refuses is refused in its words.

A file goes through four steps, each a function here:

1. ``substitute``: ``${VAR}`` in any string is the environment's ``VAR`` (``$${VAR}`` is a literal), as the
   release does.
2. ``migrate``: the release's legacy shapes in its current one (``agents.list`` is ``agents.entries``).
3. ``sort_keys``: every key is walked against both schemas, the release's and clawbus's. A key of both is
   clawbus's to validate; one of clawbus's alone (``redis``, ``session.hotMessages``) is clawbus's own; one of
   the release's alone is reported, not used; one of neither is the release's "Unrecognized key".
4. ``translate``: the release's shapes clawbus reads differently (an ``api: "openai-completions"`` provider,
   ``gateway.bind: "loopback"``, ``gateway.auth.token``) in clawbus's.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clawbus.shared.config.channels import CHAT_API_URLS
from clawbus.shared.config.release import (
    Schema,
    alternatives,
    children,
    dotted,
    release_issues,
    release_schema,
)
from clawbus.shared.config.unused import SILENT, reason

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Notice:
    """One line of ``clawbus config validate``: where, and what."""

    path: str
    message: str


@dataclass
class Reading:
    """What a file gave: the data clawbus's models validate, and what to tell the operator."""

    data: dict[str, Any]
    warnings: list[Notice] = field(default_factory=list)
    issues: list[Notice] = field(default_factory=list)


def read_openclaw_file(raw: dict[str, Any], env: Mapping[str, str], clawbus: Schema) -> Reading:
    """Steps 1-4 on a file's parsed data; ``clawbus`` is the JSON schema of clawbus's ``Config``."""
    warnings: list[Notice] = []
    data = substitute(raw, env, warnings, ())
    data = migrate(data, warnings)
    release_view, clawbus_view, unused = sort_keys(data, clawbus)
    issues = [Notice(path, message) for path, message in release_issues(release_view)]
    issues += roster_issues(data)
    warnings += [Notice(dotted(path), f"not used by clawbus: {reason(path)}") for path in unused]
    return Reading(translate(clawbus_view, env, warnings), warnings, issues)


# --- 1. ${VAR} ------------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$?\$\{([A-Z_][A-Z0-9_]*)\}")


def substitute(value: Any, env: Mapping[str, str], warnings: list[Notice], path: Path) -> Any:
    if isinstance(value, dict):
        return {key: substitute(item, env, warnings, (*path, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, env, warnings, (*path, i)) for i, item in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0).startswith("$$"):
            return match.group(0)[1:]
        found = env.get(match.group(1))
        if not found:
            # As the release: left visibly unresolved, and said.
            message = f'Missing env var "{match.group(1)}" - feature using this value will be unavailable'
            warnings.append(Notice(dotted(path), message))
            return match.group(0)
        return found

    return _VARIABLE.sub(replace, value)


# --- 2. legacy shapes -----------------------------------------------------------------------------------


def migrate(data: dict[str, Any], warnings: list[Notice]) -> dict[str, Any]:
    """``agents.list`` (a list of ``{id, ...}``) is moved to the keyed ``agents.entries``, as the release's
    doctor moves it (and says so in its words)."""
    agents = data.get("agents")
    if not isinstance(agents, dict) or not isinstance(agents.get("list"), list):
        return data
    agents = dict(agents)
    legacy = agents.pop("list")
    entries = dict(agents.get("entries") or {})
    for entry in legacy:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            spec = {key: value for key, value in entry.items() if key != "id"}
            entries.setdefault(entry["id"], spec)
    agents["entries"] = entries
    warnings.append(Notice("agents.entries", "Moved agents.list to keyed agents.entries."))
    return {**data, "agents": agents}


def roster_issues(data: dict[str, Any]) -> list[Notice]:
    """The release's checks of its agent roster beyond the schema: several agents need one to own what
    names none (``default: true``, or ``agents.ownership: "explicit"``), and every agent a setting names
    must be configured."""
    agents = _section(data, "agents")
    entries = _section(agents, "entries")
    issues = []
    defaults = [agent_id for agent_id in entries if _section(entries, agent_id).get("default") is True]
    if len(entries) > 1 and agents.get("ownership") != "explicit" and len(defaults) != 1:
        issues.append(Notice("agents.ownership", _OWNERSHIP))
    # ``main`` is always there: the release's implicit agent.
    known = {*entries, "main"}
    for path, agent_id in _agent_refs(data):
        if agent_id not in known:
            issues.append(Notice(dotted(path), f'Unknown agent id "{agent_id}" (not in agents.entries).'))
    return issues


_OWNERSHIP = (
    'multi-agent rosters require agents.ownership="explicit" or one legacy default=true marker; add '
    'agents.ownership="explicit" or run openclaw doctor'
)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is an object (the schema's check says what is wrong with anything else)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _agent_refs(data: dict[str, Any]) -> list[tuple[Path, str]]:
    """Where the release's settings name an agent: bindings, agent groups, heartbeat, system agent, talk."""
    refs: list[tuple[Path, Any]] = []
    bindings = data.get("bindings")
    for i, binding in enumerate(bindings if isinstance(bindings, list) else []):
        if isinstance(binding, dict):
            refs.append((("bindings", i, "agentId"), binding.get("agentId")))
    for peer, group in _section(data, "broadcast").items():
        where: Path = ("broadcast", peer)
        if isinstance(group, dict):
            where, group = (*where, "agents"), group.get("agents")
        if isinstance(group, list):
            refs += [((*where, i), agent_id) for i, agent_id in enumerate(group)]
    defaults = _section(_section(data, "agents"), "defaults")
    for section in ("heartbeat", "systemAgent"):
        refs.append((("agents", "defaults", section, "agentId"), _section(defaults, section).get("agentId")))
    refs.append((("talk", "agentId"), _section(data, "talk").get("agentId")))
    return [(path, agent_id) for path, agent_id in refs if isinstance(agent_id, str)]


# --- 3. whose key ---------------------------------------------------------------------------------------

# Entries clawbus reads whole, in its own shape: a provider or a channel with a ``type`` (``echo``,
# ``script``, ``webhook``, ...); the release has no ``type`` there.
_OWNED = (("models", "providers", "*"), ("channels", "*"))

_RELEASE_BINDS = frozenset({"auto", "lan", "loopback", "custom", "tailnet"})


def sort_keys(data: dict[str, Any], clawbus: Schema) -> tuple[dict[str, Any], dict[str, Any], list[Path]]:
    """(what the release validates, what clawbus validates, the release's settings clawbus does not use)."""
    unused: list[Path] = []
    release_view, clawbus_view = _sort(data, [release_schema()], [clawbus], (), unused)
    gateway = release_view.get("gateway")
    bind = gateway.get("bind") if isinstance(gateway, dict) else None
    if isinstance(gateway, dict) and isinstance(bind, str) and bind not in _RELEASE_BINDS:
        # clawbus also takes an address: to the release, that is a custom bind to it.
        release_view["gateway"] = {**gateway, "bind": "custom", "customBindHost": bind}
    return release_view, clawbus_view, unused


def _sort(
    value: Any, release: list[Schema], clawbus: list[Schema], path: Path, unused: list[Path]
) -> tuple[Any, Any]:
    if isinstance(value, list):
        release_items, clawbus_items = children(release, 0), children(clawbus, 0) or _items(clawbus)
        pairs = [
            (None, item)
            if isinstance(item, dict) and not _objects(release_items) and _objects(clawbus_items)
            else _sort(item, release_items, clawbus_items, (*path, i), unused)
            for i, item in enumerate(value)
        ]
        # An object where the release has only names (an agent's ``skills``: its A2A card's) is clawbus's.
        return [r for r, _ in pairs if r is not None], [c for _, c in pairs]
    if not isinstance(value, dict):
        return value, value
    release_part: dict[str, Any] = {}
    clawbus_part: dict[str, Any] = {}
    for key, item in value.items():
        where = (*path, key)
        in_release, in_clawbus = children(release, key), children(clawbus, key) or _values(clawbus)
        if _owned(where, item):
            clawbus_part[key] = item
        elif _unusable_channel(where, item):
            release_part[key] = item
            unused.append(where)
        elif in_release and in_clawbus:
            release_part[key], clawbus_part[key] = _sort(item, in_release, in_clawbus, where, unused)
        elif in_clawbus:
            clawbus_part[key] = item
        else:
            # The release's alone: not used; neither's: the release's refusal names it.
            release_part[key] = item
            if in_release and key not in SILENT:
                unused.append(where)
    return release_part, clawbus_part


def _objects(nodes: list[Schema]) -> bool:
    """Whether any of ``nodes`` (or their alternatives) takes an object."""
    return any(
        node == {} or node.get("type") == "object" or "properties" in node for node in alternatives(nodes)
    )


def _items(clawbus: list[Schema]) -> list[Schema]:
    return children(clawbus, 0)


def _values(clawbus: list[Schema]) -> list[Schema]:
    """clawbus keeps a keyed map of the release's (``agents.entries``) as a list: a key's value is an item."""
    return [item for node in clawbus if node.get("type") == "array" for item in children([node], 0)]


def _unusable_channel(path: Path, value: Any) -> bool:
    """A channel of the release's that clawbus has no adapter for: one of a platform it does not post to
    (WhatsApp, Matrix, a plugin's), or a bot of one it does with no ``botToken`` in the file (a token file,
    an account list) to post with."""
    if len(path) != 2 or path[0] != "channels" or not isinstance(value, dict) or "type" in value:
        return False
    return path[1] not in CHAT_API_URLS or not isinstance(value.get("botToken"), str)


def _owned(path: Path, value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "type" in value
        and any(
            len(pattern) == len(path) and all(p in ("*", k) for p, k in zip(pattern, path, strict=True))
            for pattern in _OWNED
        )
    )


# --- 4. the release's shapes in clawbus's ---------------------------------------------------------------


def translate(data: dict[str, Any], env: Mapping[str, str], warnings: list[Notice]) -> dict[str, Any]:
    data = copy.deepcopy(data)
    _providers(data, env, warnings)
    _skills(data, warnings)
    gateway = data.get("gateway")
    if isinstance(gateway, dict):
        if gateway.get("bind") == "tailnet":
            warnings.append(Notice("gateway.bind", "not used by clawbus: it binds no tailnet address"))
        auth = gateway.get("auth")
        if isinstance(auth, dict) and "token" in auth:
            auth["token"] = secret(auth["token"], env)
    return data


def _providers(data: dict[str, Any], env: Mapping[str, str], warnings: list[Notice]) -> None:
    providers = data.get("models", {}).get("providers")
    if not isinstance(providers, dict):
        return
    for name, spec in list(providers.items()):
        if not isinstance(spec, dict) or "type" in spec:
            continue
        unusable = _unusable_provider(spec)
        if unusable:
            del providers[name]
            warnings.append(Notice(f"models.providers.{name}", f"not used by clawbus: {unusable}"))
            continue
        spec["type"] = "openai"
        if "apiKey" in spec:
            spec["apiKey"] = secret(spec["apiKey"], env)
            if spec["apiKey"] is None:
                del spec["apiKey"]
                message = 'not used by clawbus: it reads a key from the file, ${VAR} or {source: "env", id}'
                warnings.append(Notice(f"models.providers.{name}.apiKey", message))


def _unusable_provider(spec: dict[str, Any]) -> str | None:
    """Why clawbus cannot call a provider of the release's (a built-in one it knows only by name)."""
    api = spec.get("api", "openai-completions")
    if api != "openai-completions":
        return f'it calls "openai-completions" endpoints only, not "{api}"'
    if not spec.get("baseUrl"):
        return "it has no baseUrl (the release knows its built-in providers' addresses; clawbus does not)"
    if not spec.get("models"):
        return "it lists no models (the release reads its built-in providers' catalogs; clawbus does not)"
    return None


def _skills(data: dict[str, Any], warnings: list[Notice]) -> None:
    """An agent's ``skills`` of the release are skill names it may load; clawbus's are what its A2A card
    lists (objects). A name is not used."""
    entries = data.get("agents", {}).get("entries")
    for agent_id, spec in entries.items() if isinstance(entries, dict) else ():
        skills = spec.get("skills") if isinstance(spec, dict) else None
        if isinstance(skills, list) and any(isinstance(skill, str) for skill in skills):
            spec["skills"] = [skill for skill in skills if not isinstance(skill, str)]
            message = "not used by clawbus: it loads no skills (an A2A card's skills are objects: id, name)"
            warnings.append(Notice(f"agents.entries.{agent_id}.skills", message))


def secret(value: Any, env: Mapping[str, str]) -> Any:
    """A secret the release writes as a ref (``{source: "env", id: "NAME"}``) as its value; None for one
    clawbus cannot read (a file's, a command's, a secret store's)."""
    if isinstance(value, dict):
        env_ref = value.get("source") == "env" and isinstance(value.get("id"), str)
        return env.get(value["id"]) if env_ref else None
    return value
