"""``/queue``: what the session's messages do while it is busy (docs/contract.md §11), read and answered as
OpenClaw 2026.9.6's ``/queue`` directive.

``/queue`` alone shows the session's settings; ``/queue <mode> [debounce:<dur>] [cap:<n>]
[drop:old|new|summarize]`` (options also as ``debounce=...``, in any order) stores them on the session;
``/queue default`` (``reset``, ``clear``) clears them all. Followed by more text, the directive applies to
that text alone: it goes on as a message with that mode and those options, and nothing is stored. Modes are
the release's, with its aliases, and clawbus's ``reject``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from clawbus.shared.commands.base import Call, Forward, Outcome
from clawbus.shared.commands.durations import parse_duration_ms
from clawbus.shared.domain.sessions import SessionPatch
from clawbus.shared.flows import queueing
from clawbus.shared.wire.models import QueueDrop, QueueMode

_MODES: dict[str, QueueMode] = {
    "steer": "steer",
    "steering": "steer",
    "followup": "followup",
    "follow-ups": "followup",
    "followups": "followup",
    "collect": "collect",
    "coalesce": "collect",
    "interrupt": "interrupt",
    "interrupts": "interrupt",
    "abort": "interrupt",
    # clawbus's own: refused while busy (the release has no such mode).
    "reject": "reject",
}
_DROPS: dict[str, QueueDrop] = {
    "old": "old",
    "oldest": "old",
    "new": "new",
    "newest": "new",
    "summarize": "summarize",
    "summary": "summarize",
}
_RESET = ("default", "reset", "clear")
_WORD = re.compile(r"\S+")
# ``debounce:2s`` or ``cap=5``; the value ends at a further separator, as the release splits it.
_OPTION = re.compile(r"(?P<name>debounce|cap|drop)[:=](?P<value>[^:=]*).*", re.IGNORECASE | re.DOTALL)
_WHOLE = re.compile(r"\+?[0-9]+")
# The longest collect window messages.queue.debounceMs allows; a session's may not be longer.
MAX_DEBOUNCE_MS = 600_000
VALID_MODES = "steer, followup, collect, interrupt, reject"
OPTIONS = f"Options: modes {VALID_MODES}; debounce:<ms|s|m>, cap:<n>, drop:old|new|summarize."
_ACK = "⚙️"


@dataclass
class Directive:
    """A ``/queue`` directive as the release parses it: each option's raw text kept, to name it when it
    is not valid."""

    mode: QueueMode | None = None
    reset: bool = False
    raw_mode: str | None = None
    options: queueing.QueueOptions = field(default_factory=queueing.QueueOptions)
    raw: dict[str, str] = field(default_factory=dict)
    # The text after the directive: the message it is a hint for.
    rest: str = ""

    @property
    def empty(self) -> bool:
        return self.mode is None and not self.reset and self.raw_mode is None and not self.raw

    def errors(self) -> list[str]:
        found = []
        if self.mode is None and not self.reset and self.raw_mode:
            found.append(f'Unrecognized queue mode "{self.raw_mode}". Valid modes: {VALID_MODES}.')
        if "debounce" in self.raw and self.options.debounce_ms is None:
            found.append(
                f'Invalid debounce "{self.raw["debounce"]}". Use ms/s/m (e.g. debounce:1500ms, debounce:2s).'
            )
        if "cap" in self.raw and self.options.cap is None:
            found.append(f'Invalid cap "{self.raw["cap"]}". Use a positive integer (e.g. cap:10).')
        if "drop" in self.raw and self.options.drop is None:
            found.append(
                f'Invalid drop policy "{self.raw["drop"]}". Use drop:old, drop:new, or drop:summarize.'
            )
        return found


def parse(rest: str) -> Directive:
    """Words are taken while they are a mode or an option; a reset ends the directive; the first word,
    when it is neither, is taken as a mode that is not valid. The rest is the message."""
    directive = Directive()
    end = 0
    for word in _WORD.finditer(rest):
        text = word.group()
        option = _OPTION.fullmatch(text)
        if text.lower() in _RESET:
            directive.reset = True
        elif option:
            _option(directive, option["name"].lower(), option["value"])
        elif text.lower() in _MODES:
            directive.mode = _MODES[text.lower()]
        elif end == 0:
            directive.raw_mode = text
        else:
            break
        end = word.end()
        if directive.reset or directive.raw_mode is not None:
            break
    directive.rest = rest[end:].strip()
    return directive


def _option(directive: Directive, name: str, value: str) -> None:
    directive.raw[name] = value
    now = directive.options
    if name == "debounce":
        directive.options = dataclasses.replace(now, debounce_ms=_debounce(value))
    elif name == "cap":
        cap = int(value) if _WHOLE.fullmatch(value.strip()) else 0
        directive.options = dataclasses.replace(now, cap=cap if cap > 0 else None)
    else:
        directive.options = dataclasses.replace(now, drop=_DROPS.get(value.lower()))


def _debounce(value: str) -> int | None:
    """Milliseconds by default; 0 is no window, which the release does not take."""
    try:
        ms = parse_duration_ms(value, default_unit="ms")
    except ValueError:
        return None
    return ms if 0 < ms <= MAX_DEBOUNCE_MS else None


def queue(call: Call) -> Outcome:
    directive = parse(call.invocation.rest)
    if directive.empty:
        return call.said(_current(call))
    if errors := directive.errors():
        return call.failed(" ".join(errors))
    if directive.rest:
        # A hint for this message only, as the release's inline directive: nothing is stored.
        return Forward(directive.rest, None if directive.reset else directive.mode, directive.options)
    return call.said(_store(call, directive))


def _current(call: Call) -> str:
    ctx = call.ctx
    entry = ctx.store.sessions.get(ctx.caller_key)
    mode = queueing.mode_for(ctx.config, entry, call.inbound.channel, None)
    held = queueing.limits(ctx.config, entry)
    settings = f"mode={mode}, debounce={held.debounce_ms}ms, cap={held.cap}, drop={held.drop}"
    return f"Current queue settings: {settings}.\n{OPTIONS}"


def _store(call: Call, directive: Directive) -> str:
    """The session's settings changed, and the release's acknowledgement of each."""
    options = directive.options
    if directive.reset:
        changes: dict[str, object] = dict.fromkeys(("queueMode", "queueDebounceMs", "queueCap", "queueDrop"))
    else:
        given = {
            "queueMode": directive.mode,
            "queueDebounceMs": options.debounce_ms,
            "queueCap": options.cap,
            "queueDrop": options.drop,
        }
        changes = {name: value for name, value in given.items() if value is not None}
    call.ctx.store.sessions.patch(call.session(), SessionPatch(changes))
    # The release acknowledges a mode named beside a reset, though the reset clears it.
    mode_ack = f"Queue mode set to {directive.mode}." if directive.mode else None
    acks = [
        mode_ack or ("Queue mode reset to default." if directive.reset else None),
        f"Queue debounce set to {options.debounce_ms}ms." if options.debounce_ms is not None else None,
        f"Queue cap set to {options.cap}." if options.cap is not None else None,
        f"Queue drop set to {options.drop}." if options.drop else None,
    ]
    return " ".join(f"{_ACK} {ack}" for ack in acks if ack) or "OK."
