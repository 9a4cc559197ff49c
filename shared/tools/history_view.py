"""Transcript messages as the release's ``sessions_history`` shows them (docs/contract.md §3, "On the wire").

clawbus keeps every message as blocks with its run and provenance; the release shows a person's message
as its text, a message forwarded from another session as the ``assistant``'s with who forwarded it
(``senderLabel``, ``senderSession``), an assistant's with the model that wrote it, and its bookkeeping
under ``__openclaw``. It leaves out what no reader needs: the silent replies that end an exchange's steps
(``REPLY_SKIP``, ``ANNOUNCE_SKIP``, ``NO_REPLY``) and the announce steps' prompts, which the release never
writes into a transcript.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from clawbus.shared.base import session_keys
from clawbus.shared.wire.models import Message

SILENT_REPLIES = frozenset({"REPLY_SKIP", "ANNOUNCE_SKIP", "NO_REPLY"})
# The inputs of the steps the release runs from its system prompt alone.
STEP_PROMPTS = frozenset({"Agent-to-agent announce step.", "Sub-agent announce step."})


def shown(message: Message) -> bool:
    """Whether the release would show this message at all."""
    if message.role == "assistant" and not message.tool_calls:
        return message.text.strip() not in SILENT_REPLIES
    if message.role == "user" and message.provenance is not None:
        return message.text not in STEP_PROMPTS
    return True


def transcript_source(session_id: str) -> str:
    """An opaque name of the transcript a message sits in, stable for the session (``transcriptPosition``)."""
    digest = hashlib.sha256(session_id.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def project(message: Message, seq: int, source: str, *, with_usage: bool = False) -> dict[str, Any]:
    """One message in the release's shape; ``seq`` is its place in the transcript (1 is the first). An
    assistant's ``usage`` is kept only ``with_usage`` (a listing's messages; a history drops it)."""
    meta: dict[str, Any] = {"id": message.id}
    if message.role == "assistant":
        out = _assistant(message, meta)
        if with_usage and message.usage is not None:
            out["usage"] = message.usage
    elif message.role == "user":
        out = _user(message, meta)
    else:  # a tool's result: its call, its text, whether it failed
        out = message.wire()
        out.pop("id", None)
        if (run_id := out.pop("runId", None)) is not None:
            meta["runId"] = run_id
    meta.update(
        recordTimestampMs=message.timestamp, transcriptPosition={"source": source, "rawSeq": seq}, seq=seq
    )
    out["__openclaw"] = meta
    return out


def _assistant(message: Message, meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": [block.wire() for block in message.content]}
    for name, value in (("api", message.api), ("provider", message.provider), ("model", message.model)):
        if value is not None:
            out[name] = value
    out["stopReason"] = message.stop_reason or ("toolUse" if message.tool_calls else "stop")
    out["timestamp"] = message.timestamp
    if message.response_id is not None:
        out["responseId"] = message.response_id
    if message.run_id is not None:
        meta["runId"] = message.run_id
    return out


def _user(message: Message, meta: dict[str, Any]) -> dict[str, Any]:
    provenance = message.provenance
    forwarded = provenance is not None and provenance.source_tool == "sessions_send"
    out: dict[str, Any] = {
        "role": "assistant" if forwarded else "user",
        "content": message.text,
        "timestamp": message.timestamp,
    }
    meta["senderIsOwner"] = provenance is None
    if message.run_id is not None:
        out["idempotencyKey"] = meta["idempotencyKey"] = f"{message.run_id}:user"
    if provenance is not None:
        out["provenance"] = provenance.wire()
    if forwarded and provenance is not None and provenance.source_session_key:
        out.update(_sender(provenance.source_session_key))
    return out


def _sender(source_key: str) -> dict[str, Any]:
    """Who forwarded a message: its agent when the source is an agent's session."""
    try:
        agent_id = session_keys.parse(source_key).agent_id
    except session_keys.SessionKeyError:
        return {"senderLabel": "Forwarded agent message", "senderSession": {"sessionKey": source_key}}
    return {
        "senderLabel": f"Forwarded from {agent_id}",
        "senderSession": {"sessionKey": source_key, "agentId": agent_id},
    }


def text_of(shown_message: dict[str, Any]) -> str:
    """The text of a message as history shows it (a person's is its text, the others blocks)."""
    content = shown_message.get("content")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content or [] if isinstance(block, dict))


def run_of(shown_message: dict[str, Any]) -> str | None:
    """The run a message as history shows it belongs to: its own (an agent's), or the one it was the input
    of (``<runId>:user``)."""
    meta = shown_message.get("__openclaw") or {}
    if meta.get("runId"):
        return str(meta["runId"])
    key = shown_message.get("idempotencyKey")
    return key.removesuffix(":user") if isinstance(key, str) else None
