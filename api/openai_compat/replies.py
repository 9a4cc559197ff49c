"""A run followed to its reply: waited on (a non-streaming request), or read as its text streams (a
streaming one), within the request's deadline (``gateway.maxWaitSeconds`` from its arrival).

A stream only ever appends: what a client was sent stays. The run's events carry the text of every model
step (a step that calls tools may say something first), while the run's reply is its last step's text,
so the stream ends with whatever of the reply it has not sent yet: the reply once the longest end of what
was sent that begins it. A model step sent again (``text_reset``, or a new attempt after a worker died)
would repeat or rewrite what the client already has: from then on the text is held back and the rest of
the reply goes out when the run ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import anyio

from clawbus.api.openai_compat.errors import API_ERROR
from clawbus.api.services import Services
from clawbus.api.streams import KEEPALIVE_MS
from clawbus.shared.domain.redaction import scrub
from clawbus.shared.ports.storage import StoreUnavailable
from clawbus.shared.wire.models import Run, RunStatus, Usage

# What the release answers when a run ended well with nothing to say.
NO_RESPONSE = "No response from OpenClaw."


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    usage: Usage


@dataclass(frozen=True, slots=True)
class Failure:
    status: int
    message: str
    type: str = API_ERROR


Outcome = Reply | Failure


@dataclass(frozen=True, slots=True)
class Ended:
    """The end of a followed run: its outcome, and the reply's text not streamed yet."""

    outcome: Outcome
    rest: str = ""


def outcome_of(run: Run | None, run_id: str, waited_s: float) -> Outcome:
    if run is None:
        return Failure(500, f"run {run_id} no longer exists (its session was deleted or the run expired)")
    if not run.status.terminal:
        return Failure(504, timed_out(run.run_id, waited_s))
    if run.status is RunStatus.OK:
        return Reply(run.reply or NO_RESPONSE, run.usage)
    # The release says only "internal error"; the run's own error (redacted) says what went wrong.
    return Failure(500, scrub(run.error) or f"run ended with status {run.status.value}")


def timed_out(run_id: str, waited_s: float) -> str:
    return (
        f"timed out after {waited_s:g}s waiting for the reply (gateway.maxWaitSeconds); the run continues: "
        f"wait again with GET /v1/runs/{run_id}/wait"
    )


async def wait_for(services: Services, run_id: str, deadline: float) -> Run | None:
    """The run once it ended, or as it is at ``deadline`` (loop time); a message a running run took in
    (a steer) is answered by that run."""
    run = await services.waiter.wait(run_id, max(deadline - anyio.current_time(), 0))
    while run is not None and run.steered_into and (left := deadline - anyio.current_time()) > 0:
        run = await services.waiter.wait(run.steered_into, left)
    return run


class AppendOnlyText:
    """The reply's text as it may be streamed: pieces as they come until a step is sent again, then the
    rest of the reply at the end."""

    def __init__(self) -> None:
        self.sent = ""
        self._held = False

    def piece(self, text: str) -> str:
        if self._held:
            return ""
        self.sent += text
        return text

    def hold(self) -> None:
        self._held = True

    def rest(self, reply: str) -> str:
        if reply.startswith(self.sent):
            return reply[len(self.sent) :]
        for size in range(min(len(self.sent), len(reply)), 0, -1):
            if self.sent.endswith(reply[:size]):
                return reply[size:]
        return reply


async def follow(
    services: Services, run_id: str, deadline: float, cap_s: float
) -> AsyncIterator[str | Ended | None]:
    """The reply's text pieces as the run streams them, ``None`` after each ``KEEPALIVE_MS`` of silence (a
    comment keeps proxies from closing the stream), then ``Ended``."""
    text = AppendOnlyText()
    cursor: str | None = None
    block: int | None = None  # the first read answers at once: the run may have ended already
    try:
        while (left := deadline - anyio.current_time()) > 0:
            entries = await services.live.follow_run(run_id, cursor, block)
            block = max(1, int(min(KEEPALIVE_MS / 1000, left) * 1000))
            ended = False
            for entry_id, fields in entries:
                cursor, kind = entry_id, fields.get("type")
                if kind == "text" and (piece := text.piece(fields.get("text", ""))):
                    yield piece
                elif kind == "text_reset" or (kind == "started" and fields.get("attempt", "1") != "1"):
                    text.hold()
                ended = ended or kind == "ended"
            if not ended and (entries or not await _gone_or_ended(services, run_id)):
                if not entries:
                    yield None
                continue
            run = await services.live.read_run(run_id)
            if run is not None and run.steered_into:  # a running run took the message in: its reply
                run_id, cursor, block = run.steered_into, None, None
                text.hold()
                continue
            yield _ended(run, run_id, text, cap_s)
            return
        yield _ended(await services.live.read_run(run_id), run_id, text, cap_s)
    except StoreUnavailable:
        message = f"the store is unavailable; the run continues: wait again with GET /v1/runs/{run_id}/wait"
        yield Ended(Failure(503, message))


async def _gone_or_ended(services: Services, run_id: str) -> bool:
    """No event came: the run may have ended before the stream's retention, or been deleted."""
    run = await services.live.read_run(run_id)
    return run is None or run.status.terminal


def _ended(run: Run | None, run_id: str, text: AppendOnlyText, cap_s: float) -> Ended:
    outcome = outcome_of(run, run_id, cap_s)
    return Ended(outcome, text.rest(outcome.text) if isinstance(outcome, Reply) else "")
