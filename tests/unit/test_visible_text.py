"""shared/runner/visible_text.py: an assistant's text cleaned to its prose, as the release hands it on (a
send's reply, a report's result, ``/subagents log``)."""

from __future__ import annotations

import pytest

from clawbus.shared.runner.visible_text import visible


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<think>weigh it up</think>The answer is 42.", "The answer is 42."),
        ("<THINKING>\nhmm\n</THINKING>\nDone.", "\nDone."),
        ("<thinking>x</thinking>Yes", "Yes"),
        ("Plan.<thought>never closed", "Plan."),
        ("I reasoned here</think>Answer", "Answer"),
        ("<final>Shipped.</final>", "Shipped."),
        ('Calling.<tool_call>{"name": "exec"}</tool_call> Done.', "Calling. Done."),
        ("<function_calls><invoke name='x'></invoke></function_calls>ok", "ok"),
        ("[TOOL_CALL]{tool => 'x', args => {}}[/TOOL_CALL]after", "after"),
        ("<relevant-memories>old notes</relevant-memories>Hi", "Hi"),
        ("Hello<|im_end|>", "Hello"),
        ("🛠️ Exec: ls -la\nThe folder is empty.", "The folder is empty."),
        ("tool_call: read\n[tool calls omitted]\n(no output)\nFine.", "Fine."),
    ],
)
def test_an_assistants_text_keeps_its_prose_only(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_code_is_kept_as_written() -> None:
    text = "Use `<think>` tags like this:\n```\n<think>plan</think>\n```\nThat is all."
    assert visible(text) == text


def test_prose_without_markup_is_untouched() -> None:
    assert (
        visible("Two < three, and 5 > 4: <b>bold</b> stays.") == "Two < three, and 5 > 4: <b>bold</b> stays."
    )
