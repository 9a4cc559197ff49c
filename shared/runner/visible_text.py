"""An assistant's text as the release hands it on (its ``sanitizeAssistantVisibleText`` for a history):
what a model writes for itself or for the runtime taken out, its prose kept. A run's reply is this text (a
send's ``reply``, the texts a reply-back turn, an announce and a report pass on, ``/subagents log``); the
transcript keeps what the model wrote, and ``sessions_history`` shows it so, as the release's does.

Taken out: reasoning blocks (``<think>``, ``<thinking>``, ``<thought>``, ``<reasoning>``, ... with what is
in them; an unclosed one to the end; text before a closing tag with no opening one), ``<final>`` tags (their
text kept), tool-call markup (``<tool_call>``, ``<function_calls>``, ``<invoke>``, ... blocks;
``[TOOL_CALL]...[/TOOL_CALL]``), ``<relevant-memories>`` blocks, model control tokens (``<|im_end|>``), the
runtime's trace lines (``🛠️ Exec: ...``, ``tool_call: ...``) and placeholder lines (``[tool calls
omitted]``, ``(no output)``). Code (fenced blocks, inline spans) is kept as written: a model explaining
these tags is not stripped. These are the release's rules in their main cases, not its every edge
(partial tags while streaming, markdown containers around a tag).
"""

from __future__ import annotations

import re

_REASONING = (
    r"(?:antml:|mm:)?(?:think|thinking|thought|reasoning)|internal|antthinking"  # the release's names
)
_TOOL_CALL = (
    r"tool_call|tool_result|function_calls?|function_response|function|tool_calls"
    r"|(?:antml:)?invoke|(?:antml:)?parameter"
)
_CODE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*\n.*?(?:^[ \t]*(?:```|~~~)[ \t]*$|\Z)|`[^`\n]+`", re.M | re.S)
# Code is set aside under a mark of private-use characters while the rest is cleaned.
_HELD = re.compile("\ue000(\\d+)\ue001")
_FINAL_TAG = re.compile(r"<\s*/?\s*final\b[^<>]*>", re.I)
_BLOCKS = (
    re.compile(rf"<\s*(?P<name>{_REASONING})\b[^<>]*>.*?(?:<\s*/\s*(?P=name)\s*>|\Z)", re.I | re.S),
    re.compile(rf"<\s*(?P<name>{_TOOL_CALL})\b[^<>]*>.*?(?:<\s*/\s*(?P=name)\s*>|\Z)", re.I | re.S),
    re.compile(r"<\s*relevant[-_]memories\b[^<>]*>.*?(?:<\s*/\s*relevant[-_]memories\s*>|\Z)", re.I | re.S),
    re.compile(r"\[\s*TOOL_(?P<kind>CALL|RESULT)\s*\].*?(?:\[\s*/\s*TOOL_(?P=kind)\s*\]|\Z)", re.I | re.S),
)
_ORPHAN_CLOSE = re.compile(rf"^.*<\s*/\s*(?:{_REASONING})\s*>", re.I | re.S)
_STRAY_TAG = re.compile(rf"<\s*/?\s*(?:{_REASONING}|{_TOOL_CALL})\b[^<>]*>", re.I)
_CONTROL_TOKEN = re.compile(r"<[|｜][^|｜]*[|｜]>")
_TRACE_LINE = re.compile(
    r"^[ \t]*(?:>\s*)?(?:"
    r"(?:⚠️\s*)?(?:📊|🛠️|📖|📝|🔍|🔎|⚙️)\s*(?:Session Status|Exec|Read|Edit|Write|Patch|Search|Open|Click|Find"
    r"|Screenshot|Update Plan|Tool Call|Tool Result|Function Call|Shell|Command)\s*:.*"
    r"|(?:tool[-_ ]?call|tool[-_ ]?result|function[-_ ]?call)\s*[:=].*"
    r"|\[tool calls omitted\]|\(no output\)"
    r")[ \t]*$\n?",
    re.I | re.M,
)


def visible(text: str) -> str:
    """``text`` with what is not for people taken out, its code kept as written."""
    codes: list[str] = []

    def hold(found: re.Match[str]) -> str:
        codes.append(found.group())
        return f"\ue000{len(codes) - 1}\ue001"

    prose = _CODE.sub(hold, text)
    prose = _FINAL_TAG.sub("", prose)
    for block in _BLOCKS:
        prose = block.sub("", prose)
    prose = _ORPHAN_CLOSE.sub("", prose)
    prose = _STRAY_TAG.sub("", prose)
    prose = _CONTROL_TOKEN.sub("", prose)
    prose = _TRACE_LINE.sub("", prose)
    return _HELD.sub(lambda found: codes[int(found[1])], prose)
