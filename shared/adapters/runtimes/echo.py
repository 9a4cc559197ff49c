"""The deterministic runtime: ``echo: <last user message>``, for the embedded default, tests, benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable

from clawbus.shared.ports.runtime import SKIP_TOKENS, RunCancelled, RunTimedOut, StepRequest, StepResult
from clawbus.shared.wire.models import Usage


def estimate_tokens(text: str) -> int:
    """About four characters a token: enough for usage figures from a model that has no tokenizer."""
    return (len(text) + 3) // 4


class EchoRuntime:
    history_window = 1  # it answers the last user message and nothing else
    repeatable = True

    def __init__(self, delay_ms: int = 0, sleep: Callable[[float], None] = time.sleep) -> None:
        self._delay_s = delay_ms / 1000
        self._sleep = sleep

    def step(self, request: StepRequest) -> StepResult:
        limit = request.time_limit
        if limit is not None and self._delay_s >= limit:
            self._sleep(max(limit, 0))
            raise RunTimedOut(f"the step needed {self._delay_s:g}s, {max(limit, 0):g}s were left")
        if self._delay_s:
            # A cancel ends the wait at once, as it would a model's stream.
            if request.cancel is not None:
                if request.cancel.wait(self._delay_s):
                    raise RunCancelled()
            else:
                self._sleep(self._delay_s)
        last = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
        # A message that is exactly a skip token is answered with it, so tests can drive the reply-back and
        # announce stop rules.
        reply = last if last in SKIP_TOKENS else f"echo: {last}"
        prompt = sum(estimate_tokens(m.text) for m in request.messages) + estimate_tokens(
            request.context or ""
        )
        return StepResult(reply=reply, usage=Usage(input_tokens=prompt, output_tokens=estimate_tokens(reply)))
