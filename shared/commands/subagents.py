"""``/subagents list|log|info`` and ``/agents``, as OpenClaw 2026.9.6 answers them, and clawbus's
``/subagents kill <id|#|all>`` (older OpenClaw's, with its words): the session's sub-agents from chat
(docs/contract.md §10).

``/subagents`` alone is ``list``; any other action is its help. ``/agents`` lists the sub-agents that are
active or bound to a thread of the channel the message came from.
"""

from __future__ import annotations

from clawbus.shared.commands.base import Call, Outcome
from clawbus.shared.commands.subagent_details import info, log
from clawbus.shared.flows import run_control
from clawbus.shared.intake import threads
from clawbus.shared.tools.subagent_targets import RECENT_MINUTES, Children, children, resolve, run_label
from clawbus.shared.tools.subagents_view import Child
from clawbus.shared.wire.models import CommandReply

HELP = "\n".join(
    [
        "Subagents",
        "Usage:",
        "- /subagents list",
        "- /subagents log <id|#> [limit] [tools]",
        "- /subagents info <id|#>",
        "- /subagents kill <id|#|all>",
        "- /session unbind",
        "- /agents",
        "- /session idle <duration|off>",
        "- /session max-age <duration|off>",
        "",
        "Ids: use the list index (#), runId/session prefix, label, or full session key.",
    ]
)
KILL_USAGE = "Usage: /subagents kill <id|#|all>"


def subagents(call: Call) -> Outcome:
    words = call.invocation.args
    action = words[0].lower() if words else "list"
    if action not in ("list", "info", "log", "kill"):
        return call.said(HELP)
    seen = children(call.ctx)
    if action == "list":
        return call.said(_list_text(seen))
    if action == "kill":
        return _kill(call, seen, words[1:])
    return (info if action == "info" else log)(call, seen, words[1:])


def _list_text(seen: Children) -> str:
    active = len(seen.view.active)
    return "\n".join(
        [
            "active subagents:",
            "-----",
            *(seen.view.lines[:active] or ["(none)"]),
            "",
            f"recent subagents (last {RECENT_MINUTES}m):",
            "-----",
            *(seen.view.lines[active:] or ["(none)"]),
        ]
    )


def _kill(call: Call, seen: Children, words: list[str]) -> Outcome:
    """The target and its whole subtree stopped, as the ``subagents`` tool's kill (each still reports,
    ``Status: killed``); ``all`` (or ``*``): every child's."""
    if not words:
        return call.said(KILL_USAGE)
    ctx = call.ctx
    if words[0] in ("all", "*"):
        roots = ctx.store.sessions.children(ctx.caller_key)
        killed = run_control.kill_tree(ctx, roots)
        said = f"killed {_count(len(killed), 'subagent')}." if killed else "no running subagents to kill."
        return _killed(call, said, killed)
    found = resolve(seen, words[0])
    if isinstance(found, str):
        return call.failed(found)
    killed = run_control.kill_tree(ctx, [found.entry.key])
    return _killed(call, _kill_text(found, killed), killed)


def _kill_text(target: Child, killed: list[str]) -> str:
    label = run_label(target)
    if not killed:
        return f"{label} is already finished."
    if target.entry.key not in killed:  # it had ended; some of its children had not
        return f"killed {_count(len(killed), 'descendant')} of {label}."
    others = len(killed) - 1
    cascade = f" (+ {_count(others, 'descendant')})" if others else ""
    return f"killed {label}{cascade}."


def _killed(call: Call, text: str, killed: list[str]) -> CommandReply:
    return call.said(text).model_copy(update={"killed": killed})


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def agents(call: Call) -> Outcome:
    """``agents:``: the active children and those bound to a thread of this channel, each with its
    binding (``binding:<threadId>``), else ``unbound`` where the channel binds threads, else ``bindings
    unavailable``."""
    seen = children(call.ctx)
    numbers = {child.entry.key: index for index, child in enumerate(seen.numbered, 1)}
    active = {row.session_key for row in seen.view.active}
    channel = call.inbound.channel
    lines = []
    for child in seen.latest:
        thread = _bound_thread(call, child, channel)
        if child.entry.key not in active and thread is None:
            continue
        binds = channel is not None and threads.rules(call.ctx.config, channel) is not None
        binding = f"binding:{thread}" if thread else "unbound" if binds else "bindings unavailable"
        number = numbers.get(child.entry.key)
        lines.append(f"{f'{number}.' if number else '-'} {run_label(child)} ({binding})")
    return call.said("\n".join(["agents:", "-----", *(lines or ["(none)"])]), command="/agents")


def _bound_thread(call: Call, child: Child, channel: str | None) -> str | None:
    """The thread of ``channel`` the child is bound to, while the binding holds."""
    route = child.entry.delivery_context
    if channel is None or route is None or route.channel != channel or route.thread_id is None:
        return None
    store = call.ctx.store
    binding = store.threads.get(channel, route.thread_id)
    rules = threads.rules(call.ctx.config, channel)
    if binding is None or binding.released or binding.session_key != child.entry.key or rules is None:
        return None
    return None if rules.expired(binding, store.clock.now_ms()) else binding.thread_id
