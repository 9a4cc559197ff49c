"""One request's message into its session and its reply back: the message accepted as an inbound chat
message (durable from then on), with the token cap and sampling the client asked for, the run waited on or
followed as it streams, within ``gateway.maxWaitSeconds`` of the request's arrival. A client that leaves
before its answer cancels the run, as the release's does, unless it sent
``x-clawbus-cancel-on-disconnect: false`` (its run then goes on, and its reply lands in the session)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import partial

import anyio
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse

from clawbus.api import idempotency
from clawbus.api.auth import Principal
from clawbus.api.openai_compat import replies, shapes
from clawbus.api.openai_compat.errors import invalid
from clawbus.api.openai_compat.prompts import Prompt
from clawbus.api.openai_compat.replies import Ended, Failure, Outcome, Reply
from clawbus.api.routes.resolve import acting_as
from clawbus.api.services import Services
from clawbus.shared.commands.inbound import receive
from clawbus.shared.domain import chains, logs, policy
from clawbus.shared.flows import run_control
from clawbus.shared.intake.submit import AwaitRun
from clawbus.shared.wire.models import CommandReply, InboundMessageParams, Sampling, ToolFailure
from clawbus.shared.wire.send_schema import SendResult

# ``false`` keeps the run of a client that leaves (a fire-and-forget request); any other value, or none,
# cancels it, as the release does.
CANCEL_ON_DISCONNECT = "x-clawbus-cancel-on-disconnect"


# What a request whose client left is answered (nobody reads it; nginx's "client closed request").
CLIENT_LEFT = 499


def refuse_model_override(request: Request) -> None:
    if request.headers.get("x-openclaw-model", "").strip():
        raise invalid("`x-openclaw-model` is not supported: clawbus runs use the agent's configured model")


def _check_size(services: Services, message: str) -> None:
    limit = services.config.gateway.limits.message_bytes
    size = len(message.encode("utf-8"))
    if size > limit:
        raise invalid(f"message too large: {size} bytes (limit {limit})")


@dataclass
class Exchange:
    """One request's message into its session, and its reply back."""

    request: Request
    services: Services
    principal: Principal
    session_key: str
    arrived: float  # loop time: the wait's bound counts from the request's arrival

    @property
    def cap_s(self) -> float:
        return float(self.services.config.gateway.max_wait_seconds)

    @property
    def deadline(self) -> float:
        return self.arrived + self.cap_s

    @property
    def cancel_on_leave(self) -> bool:
        return self.request.headers.get(CANCEL_ON_DISCONNECT, "").strip().lower() != "false"

    async def start(
        self, prompt: Prompt, demanded: str | None, sampling: Sampling | None = None
    ) -> tuple[str, Outcome | None]:
        """The id the answer is named by (the run's) and, when no run is followed, the answer: a
        demanded client tool call (no clawbus run makes one: answered at once as the release answers one
        not made), or the session's refusal. ``sampling`` goes with the run to each of its model calls."""
        if demanded is not None:
            return str(uuid.uuid4()), Failure(502, demanded)
        _check_size(self.services, prompt.message)
        ctx = acting_as(
            self.services, self.principal, self.session_key, field="session", unknown_agent_status=400
        )
        # The request as its client wrote it (a session made up per request differs between repeats).
        asked = json.loads(await self.request.body() or b"null")
        seed = idempotency.seed(self.services, self.principal, self.request, asked)
        if seed is not None:  # a repeat of the request answers with its first run
            ctx = dataclasses.replace(ctx, id_seed=seed)
        inbound = InboundMessageParams(message=prompt.message, timeout_seconds=self.cap_s)
        with logs.bound(session_key=ctx.caller_key):
            accept = partial(receive, commands=False, sampling=sampling, chain=self._chain())
            result = await run_in_threadpool(accept, ctx, inbound, prompt.system)
        if isinstance(result, AwaitRun):
            return result.run_id, None
        if isinstance(result, SendResult) and result.status == "accepted":  # accepted, not waited on
            return result.run_id, None
        return str(uuid.uuid4()), _without_run(result)

    def _chain(self) -> chains.Chain | None:
        """The chain a client in one sends on (``x-clawbus-chain``: another clawbus's run, a script relaying
        one): the request is a hop of it; anything unreadable starts a chain, as any request does."""
        sent = self.request.headers.get(chains.HEADER)
        if not sent:
            return None
        try:
            return chains.decode(json.loads(sent))
        except ValueError:
            return None

    async def wait(self, run_id: str) -> Outcome | None:
        """The run's outcome; None if the client left first (its run cancelled unless it asked to keep it)."""
        waiting = asyncio.ensure_future(replies.wait_for(self.services, run_id, self.deadline))
        leaving = asyncio.ensure_future(_disconnect(self.request))
        try:
            await asyncio.wait({waiting, leaving}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (waiting, leaving):
                task.cancel()
        if waiting.done() and not waiting.cancelled():
            return replies.outcome_of(waiting.result(), run_id, self.cap_s)
        await self._left(run_id)
        return None

    def events(self, run_id: str, known: Outcome | None) -> shapes.Events:
        if known is not None:
            return _told(known)
        return replies.follow(self.services, run_id, self.deadline, self.cap_s)

    def stream(self, chunks: AsyncIterator[str], run_id: str, known: Outcome | None) -> StreamingResponse:
        body = chunks if known is not None else self._cancelling(chunks, run_id)
        return StreamingResponse(body, media_type="text/event-stream", headers=shapes.STREAM_HEADERS)

    async def _cancelling(self, chunks: AsyncIterator[str], run_id: str) -> AsyncIterator[str]:
        """The stream; a client that leaves before its end (Starlette then stops the stream) cancels the
        run unless it asked to keep it."""
        finished = False
        try:
            async for chunk in chunks:
                yield chunk
            finished = True
        finally:
            if not finished:
                await self._left(run_id)

    async def _left(self, run_id: str) -> None:
        if not self.cancel_on_leave:
            return
        services = self.services
        with anyio.CancelScope(shield=True):
            await run_in_threadpool(run_control.cancel_run, services, run_id)


async def _disconnect(request: Request) -> None:
    """Returns when the client has gone (the body is read by now: the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _told(outcome: Outcome) -> AsyncIterator[str | Ended | None]:
    yield Ended(outcome, outcome.text if isinstance(outcome, Reply) else "")


def _without_run(result: SendResult | ToolFailure | CommandReply) -> Outcome:
    """What the session answered without a run to follow (no command is run here: never a command's reply)."""
    assert not isinstance(result, CommandReply)
    if isinstance(result, ToolFailure) and (result.error == policy.BLOCKED or result.guard is not None):
        return Failure(403, result.error, "forbidden")  # the send policy, or a chain guard (x-clawbus-chain)
    # A busy session that refuses messages (queue mode ``reject``), or whose queue is full.
    message = result.error or f"session busy with run {result.run_id}"
    return Failure(429, message, "rate_limit_error")
