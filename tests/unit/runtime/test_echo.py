"""shared/adapters/runtimes/echo.py: deterministic replies, skip tokens, usage estimate, delay."""

from __future__ import annotations

import pytest

from clawbus.shared.adapters.runtimes.echo import EchoRuntime
from clawbus.shared.ports.runtime import StepRequest
from clawbus.shared.wire.models import Message, Role


def request(*texts: str, role: Role = "user") -> StepRequest:
    messages = [Message.of(role, t, timestamp=i) for i, t in enumerate(texts)]
    return StepRequest(agent_id="main", model="echo/echo", session=None, messages=messages)


def test_replies_with_the_last_user_message() -> None:
    assert EchoRuntime().step(request("first", "second")).reply == "echo: second"


@pytest.mark.parametrize("token", ["REPLY_SKIP", "ANNOUNCE_SKIP"])
def test_a_skip_token_is_answered_with_itself(token: str) -> None:
    assert EchoRuntime().step(request(token)).reply == token


@pytest.mark.parametrize("near", ["reply_skip", "  REPLY_SKIP\n", "ANNOUNCE_SKIP please"])
def test_anything_but_exactly_a_skip_token_is_echoed(near: str) -> None:
    assert EchoRuntime().step(request(near)).reply == f"echo: {near}"


def test_usage_is_estimated_from_characters() -> None:
    usage = EchoRuntime().step(request("x" * 40)).usage
    assert (usage.input_tokens, usage.output_tokens) == (10, 12)


def test_the_delay_is_configurable() -> None:
    slept: list[float] = []
    EchoRuntime(delay_ms=250, sleep=slept.append).step(request("x"))
    assert slept == [0.25]
