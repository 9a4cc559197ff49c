"""The release's answers, field for field and in its key order: a chat completion and its
``chat.completion.chunk`` stream (``data: <json>`` lines, ``data: [DONE]`` last), a response resource and
the OpenResponses event stream (``event: <type>`` and ``data: <json>``, ``data: [DONE]`` last)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from clawbus.api.openai_compat.errors import error_body
from clawbus.api.openai_compat.replies import Ended, Failure, Reply
from clawbus.api.streams import KEEPALIVE
from clawbus.shared.wire.models import Usage

DONE = "data: [DONE]\n\n"
# The release's event streams, with clawbus's advice to proxies not to buffer them.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Events = AsyncIterator[str | Ended | None]


def dumps(value: Any) -> str:
    """As JavaScript's ``JSON.stringify``: no spaces, text as it is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def now_s() -> int:
    return int(time.time())


# --- chat completions -------------------------------------------------------------------------------------


def chat_usage(usage: Usage) -> dict[str, int]:
    prompt, completion = usage.input_tokens or 0, usage.output_tokens or 0
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@dataclass(frozen=True, slots=True)
class ChatIdentity:
    id: str  # chatcmpl_<run id>
    model: str  # as the request named it
    created: int = field(default_factory=now_s)


def chat_completion(identity: ChatIdentity, reply: Reply) -> dict[str, Any]:
    return {
        "id": identity.id,
        "object": "chat.completion",
        "created": identity.created,
        "model": identity.model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}
        ],
        "usage": chat_usage(reply.usage),
    }


def chat_chunk(identity: ChatIdentity, **fields: Any) -> str:
    chunk = {"id": identity.id, "object": "chat.completion.chunk", "created": identity.created}
    return f"data: {dumps({**chunk, 'model': identity.model, **fields})}\n\n"


def _delta(identity: ChatIdentity, delta: dict[str, str], finish_reason: str | None = None) -> str:
    return chat_chunk(identity, choices=[{"index": 0, "delta": delta, "finish_reason": finish_reason}])


async def chat_stream(identity: ChatIdentity, events: Events, include_usage: bool) -> AsyncIterator[str]:
    """The role first, the text as it comes, then the finish (and the usage, when asked for); a failure
    is an ``error`` object. ``[DONE]`` either way."""
    yield _delta(identity, {"role": "assistant"})
    async for event in events:
        if event is None:
            yield KEEPALIVE
        elif isinstance(event, str):
            yield _delta(identity, {"content": event})
        elif isinstance(event.outcome, Failure):
            yield f"data: {dumps(error_body(event.outcome.message, event.outcome.type))}\n\n"
            break
        else:
            if event.rest:
                yield _delta(identity, {"content": event.rest})
            yield _delta(identity, {}, "stop")
            if include_usage:
                yield chat_chunk(identity, choices=[], usage=chat_usage(event.outcome.usage))
            break
    yield DONE


# --- responses --------------------------------------------------------------------------------------------


def responses_usage(usage: Usage | None = None) -> dict[str, Any]:
    given = usage or Usage()
    prompt, output = given.input_tokens or 0, given.output_tokens or 0
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


@dataclass(frozen=True, slots=True)
class ResponseIdentity:
    id: str  # resp_<run id>
    model: str
    item_id: str  # msg_<uuid>: the assistant message's output item
    created_at: int = field(default_factory=now_s)


def response_resource(
    identity: ResponseIdentity,
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None = None,
    error: Failure | None = None,
) -> dict[str, Any]:
    resource = {
        "id": identity.id,
        "object": "response",
        "created_at": identity.created_at,
        "status": status,
        "model": identity.model,
        "output": output,
        "usage": responses_usage(usage),
    }
    return {**resource, "error": {"code": error.type, "message": error.message}} if error else resource


def assistant_item(item_id: str, text: str, status: str, phase: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }
    return {**item, "phase": phase, "status": status} if phase else {**item, "status": status}


def completed_response(identity: ResponseIdentity, reply: Reply) -> dict[str, Any]:
    item = assistant_item(identity.item_id, reply.text, "completed", "final_answer")
    return response_resource(identity, "completed", [item], reply.usage)


def failed_response(identity: ResponseIdentity, failure: Failure) -> dict[str, Any]:
    return response_resource(identity, "failed", [], error=failure)


def event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: {dumps({'type': kind, **fields})}\n\n"


async def responses_stream(identity: ResponseIdentity, events: Events) -> AsyncIterator[str]:
    """``response.created``, ``response.in_progress``, the message item and its text part added, the text
    as it comes, then the text, part and item done and ``response.completed``; a failure is
    ``response.failed``. ``[DONE]`` either way."""
    started = response_resource(identity, "in_progress", [])
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    empty = {**assistant_item(identity.item_id, "", "in_progress"), "content": []}
    yield event("response.output_item.added", output_index=0, item=empty)
    yield event("response.content_part.added", **_part(identity), part={"type": "output_text", "text": ""})
    streamed = ""
    async for step in events:
        if step is None:
            yield KEEPALIVE
        elif isinstance(step, str):
            streamed += step
            yield event("response.output_text.delta", **_part(identity), delta=step)
        elif isinstance(step.outcome, Failure):
            yield event("response.failed", response=failed_response(identity, step.outcome))
            break
        else:
            for text in _finished(identity, streamed, step.rest, step.outcome):
                yield text
            break
    yield DONE


def _part(identity: ResponseIdentity) -> dict[str, Any]:
    return {"item_id": identity.item_id, "output_index": 0, "content_index": 0}


def _finished(identity: ResponseIdentity, streamed: str, rest: str, reply: Reply) -> list[str]:
    text = streamed + rest
    item = assistant_item(identity.item_id, text, "completed", "final_answer")
    done = [event("response.output_text.delta", **_part(identity), delta=rest)] if rest else []
    return [
        *done,
        event("response.output_text.done", **_part(identity), text=text),
        event("response.content_part.done", **_part(identity), part={"type": "output_text", "text": text}),
        event("response.output_item.done", output_index=0, item=item),
        event("response.completed", response=response_resource(identity, "completed", [item], reply.usage)),
    ]
