"""What of a request's ``messages`` (chat completions) or ``input`` (responses) goes into the session, as the
release builds it (its ``buildAgentPrompt``):

- ``system`` and ``developer`` messages are the run's system text, for this run only: joined with a blank
  line, never written to the transcript (clawbus: the run's ``context``);
- the current message is the last ``user`` (or ``tool`` / ``function_call_output``) entry; alone, its text
  is the message as is;
- with earlier ``user``/``assistant``/``tool`` entries (the client keeps its own history), the message is
  those as ``User: ...`` / ``Assistant: ...`` / ``Tool:<call id>: ...`` lines under
  ``[Chat messages since your last reply - for context]``, then a blank line,
  ``[Current message - respond to this]`` and ``User: <current>``. Entries after the current one are left
  out; an assistant's tool calls are written ``tool_call id=<id> name=<name> arguments=<json>``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from clawbus.api.openai_compat.requests import (
    FunctionCallItem,
    FunctionCallOutputItem,
    InputItem,
    InputText,
    MessageItem,
    OutputText,
)

HISTORY_MARKER = "[Chat messages since your last reply - for context]"
CURRENT_MARKER = "[Current message - respond to this]"
# What a failed model stream leaves as an assistant turn: the release keeps it out of the prompt.
STREAM_ERROR_TEXT = "[assistant turn failed before producing content]"

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class Prompt:
    message: str  # empty: the request has no message to answer
    system: str | None  # the run's system text
    media: bool = False  # the current message carries images or files (clawbus runs take text only)


@dataclass(frozen=True, slots=True)
class _Entry:
    role: Role
    sender: str
    body: str
    stream_error: bool = False

    def shown(self) -> str | None:
        return None if self.stream_error and self.body.strip() == STREAM_ERROR_TEXT else self.body


def conversation_message(entries: Sequence[_Entry]) -> str:
    """The message the agent answers: the current entry, with what came before it as context."""
    if not entries:
        return ""
    current = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].role in ("user", "tool")), -1)
    if current < 0:
        current = len(entries) - 1
    history = [f"{e.sender}: {shown}" for e in entries[:current] if (shown := e.shown()) is not None]
    body = entries[current].shown()
    if body is None:
        return ""
    if not history and entries[current].role != "tool":
        return body
    now = f"{entries[current].sender}: {body}"
    text = "\n".join(history)
    return "\n".join([HISTORY_MARKER, text, "", CURRENT_MARKER, now]) if text.strip() else now


def _joined(parts: Sequence[str | None]) -> str | None:
    return "\n\n".join(p for p in parts if p) or None


def tool_call_line(call_id: str, name: str, arguments: str) -> str:
    return f"tool_call id={call_id} name={name} arguments={arguments}"


# --- chat completions -------------------------------------------------------------------------------------


def chat_prompt(messages: Sequence[Any]) -> Prompt:
    system: list[str] = []
    entries: list[_Entry] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = _trimmed(message.get("role"))
        content = _chat_content(message)
        if not role:
            continue
        if role in ("system", "developer"):
            if content:
                system.append(content)
            continue
        entry = _chat_entry(message, role, content)
        if entry is not None:
            entries.append(entry)
    return Prompt(conversation_message(entries), _joined(system), _chat_media(messages))


def _chat_content(message: Mapping[str, Any]) -> str | None:
    # A legacy ``function`` result may say ``content: null``: it still answers its call.
    if message.get("role") == "function" and "content" in message and message["content"] is None:
        return ""
    text = _chat_text(message.get("content"))
    return text.strip() if text is not None else None


def _chat_entry(message: Mapping[str, Any], role: str, content: str | None) -> _Entry | None:
    kind = "tool" if role == "function" else role
    if kind not in ("user", "assistant", "tool"):
        return None
    calls = _tool_calls(message.get("tool_calls")) if kind == "assistant" else []
    body = "\n".join(part for part in (content, *calls) if part)
    name = _trimmed(message.get("name")) or ""
    call_id = _trimmed(message.get("tool_call_id")) or ""
    raw = message.get("content")
    answers_a_call = (
        kind == "tool"
        and bool(name if role == "function" else call_id)
        and content is not None
        and (role != "function" or isinstance(raw, str) or ("content" in message and raw is None))
    )
    if not body and not answers_a_call:
        return None
    sender = {"assistant": "Assistant", "user": "User"}.get(kind) or (
        f"Tool:{call_id}" if call_id else f"Tool:{name}" if name else "Tool"
    )
    stream_error = kind == "assistant" and _trimmed(message.get("stopReason")) == "error"
    return _Entry(cast(Role, kind), sender, body, stream_error)


def _chat_text(content: Any) -> str | None:
    """A string, or the text parts of a part list joined by lines (None: no text in a list that has parts
    of other kinds)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = [_part_text(part) for part in content]
    text = "\n".join(part for part in parts if part)
    return text if text.strip() or all(part is not None for part in parts) else None


def _part_text(part: Any) -> str | None:
    if not isinstance(part, Mapping):
        return None
    text, input_text = part.get("text"), part.get("input_text")
    if part.get("type") in ("text", "input_text") and isinstance(text, str):
        return text
    return input_text if isinstance(input_text, str) else None


def _tool_calls(value: Any) -> list[str]:
    lines = []
    for call in value if isinstance(value, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        call_id, name = _trimmed(call.get("id")), _trimmed(function.get("name"))
        if call_id and name:
            lines.append(tool_call_line(call_id, name, _arguments(function.get("arguments"))))
    return lines


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _chat_media(messages: Sequence[Any]) -> bool:
    """The current turn (the last user or tool message) is a user message with ``image_url`` parts."""
    for message in reversed(messages):
        if not isinstance(message, Mapping):
            continue
        role = _trimmed(message.get("role"))
        if role in ("user", "tool", "function"):
            content = message.get("content")
            return role == "user" and isinstance(content, list) and any(_is_image(p) for p in content)
    return False


def _is_image(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "image_url"


def _trimmed(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


# --- responses --------------------------------------------------------------------------------------------


def responses_prompt(given: str | list[InputItem], instructions: str | None) -> Prompt:
    """``instructions`` go first in the run's system text, then the system and developer messages."""
    if isinstance(given, str):
        return Prompt(given, _joined([instructions]))
    system: list[str] = []
    entries: list[_Entry] = []
    for item in given:
        if isinstance(item, MessageItem):
            body = _item_text(item)
            if item.role in ("system", "developer"):
                system += [body] if body else []
            elif body:
                role: Role = "assistant" if item.role == "assistant" else "user"
                entries.append(_Entry(role, "Assistant" if role == "assistant" else "User", body))
        elif isinstance(item, FunctionCallItem):
            line = tool_call_line(item.call_id or item.id or "", item.name, item.arguments)
            entries.append(_Entry("assistant", "Assistant", line))
        elif isinstance(item, FunctionCallOutputItem):
            entries.append(_Entry("tool", f"Tool:{item.call_id}", item.output))
    current = _current_user_message(given)
    media = current is not None and current.has_media
    return Prompt(conversation_message(entries), _joined([instructions, *system]), media)


def _item_text(item: MessageItem) -> str:
    if isinstance(item.content, str):
        return item.content.strip()
    texts = (part.text for part in item.content if isinstance(part, InputText | OutputText))
    return "\n".join(text for text in texts if text).strip()


def _current_user_message(items: Sequence[InputItem]) -> MessageItem | None:
    """The user message being answered: none when a tool result came after the last one."""
    for item in reversed(items):
        if isinstance(item, FunctionCallOutputItem):
            return None
        if isinstance(item, MessageItem) and item.role == "user":
            return item
    return None
