"""``/session idle|max-age [<duration>|off]`` and ``/session unbind``: the thread binding of the conversation
the message was written in (a thread bound to a sub-agent, ``shared.intake.threads``), as OpenClaw 2026.9.6
answers them.

Without a duration, ``idle`` and ``max-age`` say the limit in force and when it runs out; with one
(``30m``, ``2h``, ``1h30m``; a bare number is hours; ``off``, ``0``, ... disable it) they set the binding's
own limit, over its channel's (``session.threadBindings``). ``unbind`` releases the binding: the thread's
messages go to the session that spawned the sub-agent again, and the sub-agent's session stays.
"""

from __future__ import annotations

from clawbus.shared.base import session_keys
from clawbus.shared.commands.base import Call, Outcome
from clawbus.shared.commands.durations import binding_duration, iso, parse_duration_ms
from clawbus.shared.intake import threads
from clawbus.shared.wire.models import ThreadBinding

USAGE = (
    "Usage: /session idle <duration|off> | /session max-age <duration|off> | /session unbind "
    "(example: /session idle 24h)"
)
NOT_BINDABLE = "⚠️ /session commands must be run inside a bindable conversation."
NOT_BOUND = "ℹ️ This conversation is not currently bound."
_OFF = ("off", "disable", "disabled", "none", "0")


def session(call: Call) -> Outcome:
    words = call.invocation.args
    action = words[0].lower() if words else ""
    if action not in ("idle", "max-age", "unbind") or (action == "unbind" and len(words) > 1):
        return call.said(USAGE)
    bound = _binding(call)
    if isinstance(bound, str):
        return call.failed(bound)
    binding, rules = bound
    now = call.ctx.store.clock.now_ms()
    if action == "unbind":
        call.ctx.store.threads.release(binding, now)
        return call.said("✅ Conversation unbound.")
    # The release joins the words: ``/session idle 1h 30m`` is ``1h30m``.
    duration = "".join(words[1:])
    if not duration:
        return call.said(_shown(action, rules.of(binding), binding, now))
    try:
        ms = 0 if duration.lower() in _OFF else parse_duration_ms(duration, default_unit="h")
    except ValueError:
        return call.failed(USAGE)
    updated = _limit(call, action, binding, ms)
    return call.said(_set(action, ms, _expiry(action, rules.of(updated), updated)))


def _limit(call: Call, action: str, binding: ThreadBinding, ms: int) -> ThreadBinding:
    """The binding's own idle or age limit set; the binding as it is now."""
    if action == "idle":
        call.ctx.store.threads.set_limit(binding, "idleTimeoutMs", ms)
        return binding.model_copy(update={"idle_timeout_ms": ms})
    call.ctx.store.threads.set_limit(binding, "maxAgeMs", ms)
    return binding.model_copy(update={"max_age_ms": ms})


def _binding(call: Call) -> tuple[ThreadBinding, threads.Rules] | str:
    """The binding of the thread the message was sent to, holding (an expired one was released on the
    message's way in), or why there is none."""
    key = call.addressed
    channel = session_keys.channel_of(key)
    thread = session_keys.thread_of(key) or session_keys.peer_of(key)
    rules = threads.rules(call.ctx.config, channel) if channel else None
    if channel is None or thread is None or rules is None:
        return NOT_BINDABLE
    binding = call.ctx.store.threads.get(channel, thread)
    if binding is None or binding.released:
        return NOT_BOUND
    return binding, rules


def _expiry(action: str, rules: threads.Rules, binding: ThreadBinding) -> int | None:
    """When the binding runs out by this limit; None when the limit is off."""
    if action == "idle":
        idle = rules.idle_ms
        return max(binding.last_active_at, binding.bound_at) + idle if idle else None
    return binding.bound_at + rules.max_age_ms if rules.max_age_ms else None


def _shown(action: str, rules: threads.Rules, binding: ThreadBinding, now: int) -> str:
    expires = _expiry(action, rules, binding)
    if action == "idle":
        if expires is None or expires <= now:
            return "ℹ️ Idle timeout is currently disabled for this bound session."
        limit = binding_duration(rules.idle_ms or 0)
        return f"ℹ️ Idle timeout active ({limit}, next auto-unbind at {iso(expires)})."
    if expires is None or expires <= now:
        return "ℹ️ Max age is currently disabled for this bound session."
    limit = binding_duration(rules.max_age_ms or 0)
    return f"ℹ️ Max age active ({limit}, hard auto-unbind at {iso(expires)})."


def _set(action: str, ms: int, expires: int | None) -> str:
    """The release's confirmation; clawbus binds one thread per sub-agent, so it is always one binding."""
    what = "Idle timeout" if action == "idle" else "Max age"
    if ms <= 0:
        return f"✅ {what} disabled for 1 binding."
    when = iso(expires) if expires is not None else "n/a"
    limit = "next auto-unbind" if action == "idle" else "hard auto-unbind"
    return f"✅ {what} set to {binding_duration(ms)} for 1 binding ({limit} at {when})."
