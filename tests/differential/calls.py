"""What a scenario is made of: named HTTP calls, references to earlier answers, and waits.

A scenario runs on each side (the OpenClaw gateway, clawbus) in the same order, so both sides' state evolves
the same way. A call may use a value an earlier answer of the SAME side gave (``Ref``: the child session a
spawn created), and may be repeated until its answer shows a condition (``Until``). A ``Settle`` step waits
until the model traffic that earlier calls started on that side is over (an exchange's reply and announce
steps, a child's run), so the next call sees a side at rest and not a race.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

TOKEN = "diff-token"
INVOKE = "/tools/invoke"

Auth = Literal["token", "none", "bad"]


@dataclass(frozen=True)
class Ref:
    """The value at ``path`` (``childSessionKey``, ``sessions[0].key``) of the payload the call named
    ``call`` answered on this side: its ``result.details``, else its ``result``, else its whole body."""

    call: str
    path: str


@dataclass(frozen=True)
class Until:
    """Repeat the call until ``holds`` is true of its payload (as for ``Ref``), for ``deadline`` seconds;
    the last answer is the call's answer, with a note when the deadline passed."""

    holds: Callable[[Any], bool]
    describe: str
    deadline: float = 60.0


@dataclass(frozen=True)
class Call:
    name: str
    method: str = "POST"
    path: str = INVOKE
    # A JSON body (``Ref`` anywhere in it is replaced by its value), or ``raw`` text sent as it is.
    body: Any = None
    raw: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    auth: Auth = "token"
    until: Until | None = None
    # Seconds for the HTTP exchange itself: a waited send answers within its timeoutSeconds.
    timeout: float = 90.0


@dataclass(frozen=True)
class Settle:
    """Wait until this side's model has had at least ``model_calls`` requests, ``announce_steps`` of them
    agent-to-agent announce steps, since the call ``since`` was sent, and then nothing for a moment (no
    request in flight, none new): the runs those calls started have all ended. After a call that was
    refused, only the quiet is waited for."""

    since: str
    model_calls: int = 0
    announce_steps: int = 0
    deadline: float = 45.0


Step = Call | Settle


def tool(name: str, tool_name: str, args: Any = None, *, until: Until | None = None, **top: Any) -> Call:
    """A ``POST /tools/invoke`` of ``tool_name``; ``top`` adds fields beside ``tool`` and ``args``
    (``sessionKey``: the calling session)."""
    body: dict[str, Any] = {"tool": tool_name, "args": {} if args is None else args, **top}
    return Call(name, body=body, until=until)


def payload_of(body: Any) -> Any:
    """What a call answered, without its envelope: ``result.details`` (the gateway's shape), else
    ``result`` (a bare result), else the body itself (the OpenAI endpoints, errors)."""
    if isinstance(body, dict) and isinstance(body.get("result"), dict):
        result = body["result"]
        return result["details"] if isinstance(result.get("details"), dict) else result
    return body


def lookup(value: Any, path: str) -> Any:
    """``path`` (``a.b[0].c``) in ``value``; KeyError when any part is missing."""
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(value, list) or index >= len(value):
                raise KeyError(path)
            value = value[index]
        else:
            if not isinstance(value, dict) or part not in value:
                raise KeyError(path)
            value = value[part]
    return value
