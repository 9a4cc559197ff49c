"""The scripted runtime: replies and tool calls chosen by regex rules from the config, else the echo reply.

Deterministic, so demos and tests can drive agents through tool calls and the reply-back and announce stop
rules without a model.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from clawbus.shared.adapters.runtimes.echo import EchoRuntime, estimate_tokens
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import ScriptRule
from clawbus.shared.ports.runtime import StepRequest, StepResult
from clawbus.shared.wire.models import ToolCallBlock


class ScriptedFailure(ClawbusError, RuntimeError):
    """A rule's ``error``: the step fails as a real model call can."""


class ScriptRuntime:
    history_window = 1
    repeatable = True

    def __init__(
        self, rules: list[ScriptRule], delay_ms: int = 0, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self._rules = [(re.compile(rule.match), rule) for rule in rules]
        self._echo = EchoRuntime(delay_ms, sleep)

    def step(self, request: StepRequest) -> StepResult:
        echoed = self._echo.step(request)
        last = request.messages[-1] if request.messages else None
        text = last.text if last else ""
        for pattern, rule in self._rules:
            if not pattern.search(text):
                continue
            if rule.error is not None:
                raise ScriptedFailure(rule.error)
            if rule.calls:
                assert last is not None
                # Derived from the message they answer: the same step asked again makes the same calls.
                ids = [f"call_{last.id}" + (f"_{i}" if i else "") for i in range(len(rule.calls))]
                calls = [
                    ToolCallBlock(id=call_id, name=c.name, arguments=c.args)
                    for call_id, c in zip(ids, rule.calls, strict=True)
                ]
                written = estimate_tokens(str([c.args for c in rule.calls]))
                usage = echoed.usage.model_copy(update={"output_tokens": written})
                return StepResult(reply="", usage=usage, tool_calls=calls)
            reply = rule.reply or ""
            if request.on_text is not None and reply:
                request.on_text(reply)
            usage = echoed.usage.model_copy(update={"output_tokens": estimate_tokens(reply)})
            return StepResult(reply=reply, usage=usage)
        return echoed
