"""shared/adapters/runtimes/script.py: regex rules, the first match wins, echo otherwise, tool calls and
errors on demand."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clawbus.shared.adapters.runtimes.script import ScriptedFailure, ScriptRuntime
from clawbus.shared.config import ScriptRule
from clawbus.shared.ports.runtime import StepRequest
from clawbus.shared.wire.models import Message


def step(rules: list[ScriptRule], text: str) -> str:
    request = StepRequest(
        agent_id="a", model="s/script", session=None, messages=[Message.of("user", text, timestamp=1)]
    )
    return ScriptRuntime(rules).step(request).reply


def test_the_first_matching_rule_answers() -> None:
    rules = [ScriptRule(match="^stop", reply="REPLY_SKIP"), ScriptRule(match="stop", reply="later")]
    assert step(rules, "stop now") == "REPLY_SKIP"
    assert step(rules, "please stop") == "later"


def test_no_match_echoes() -> None:
    assert step([ScriptRule(match="^x$", reply="y")], "hello") == "echo: hello"


def test_an_error_rule_fails_the_step() -> None:
    with pytest.raises(ScriptedFailure, match="disk full"):
        step([ScriptRule(match="fail", error="disk full")], "please fail")


@pytest.mark.parametrize(
    "fields",
    [
        {"match": "x"},
        {"match": "x", "reply": "a", "error": "b"},
        {"match": "x", "reply": "a", "tool": {"name": "sessions_list"}},
        {"match": "(", "reply": "a"},
    ],
)
def test_a_rule_needs_one_outcome_and_a_valid_regex(fields: dict[str, str]) -> None:
    with pytest.raises(ValidationError):
        ScriptRule.model_validate(fields)


def test_a_tool_rule_calls_the_tool_with_its_arguments() -> None:
    rule = ScriptRule.model_validate(
        {"match": "^who", "tool": {"name": "sessions_list", "args": {"limit": 3}}}
    )
    asked = Message.of("user", "who is around?", timestamp=1)
    request = StepRequest(agent_id="a", model="s/script", session=None, messages=[asked])
    result = ScriptRuntime([rule]).step(request)
    assert result.reply == ""
    [call] = result.tool_calls
    assert (call.name, call.arguments) == ("sessions_list", {"limit": 3})
    # Asked again about the same message (a retried step), it makes the same call.
    assert ScriptRuntime([rule]).step(request).tool_calls[0].id == call.id


def test_rules_match_the_last_message_whatever_its_role() -> None:
    rule = ScriptRule(match='"status": "ok"', reply="got it")
    answer = Message.of("toolResult", '{"status": "ok"}', timestamp=1)
    request = StepRequest(
        agent_id="a", model="s/script", session=None, messages=[Message.of("user", "go", timestamp=1), answer]
    )
    assert ScriptRuntime([rule]).step(request).reply == "got it"
