"""shared/domain/subagents.py: the normalized announce (docs/contract.md §6), its sections, fallbacks and
figures."""

from __future__ import annotations

import pytest

from shared.domain.subagents import AnnounceInputs, normalize, sections, status_of
from shared.wire.models import Run, RunStatus, Usage


def child(
    status: RunStatus = RunStatus.OK, reply: str | None = "child final", error: str | None = None
) -> Run:
    return Run(
        run_id="r",
        session_key="agent:main:subagent:x",
        agent_id="main",
        kind="subagent",
        status=status,
        seq=1,
        created_at=0,
        started_at=1_000,
        ended_at=73_000,
        reply=reply,
        error=error,
        usage=Usage(input_tokens=800, output_tokens=400, cost_usd=0.012),
    )


def report(reply: str, run: Run | None = None, tool_result: str | None = None) -> dict[str, str]:
    text = normalize(
        AnnounceInputs(run if run is not None else child(), reply, tool_result, None, "/t.jsonl")
    )
    head, _, stats = text.rpartition("\nStats: ")
    assert stats.endswith("transcript /t.jsonl")
    status, _, rest = head.partition("\nResult: ")
    result, _, notes = rest.partition("\nNotes: ")
    return {"status": status.removeprefix("Status: "), "result": result, "notes": notes}


@pytest.mark.parametrize(
    "reply",
    [
        "Result: 42\nNotes: checked twice",
        "- Result: 42\n- Notes: checked twice",
        "**Result:** 42\n**Notes:** checked twice",
        "* **result**: 42\n__Notes__: checked twice",
        "Here it is.\nResult: 42\nNotes: checked twice",
    ],
)
def test_result_and_notes_are_found_with_bullets_and_bold_labels(reply: str) -> None:
    found = sections(reply)
    assert (found["result"], found["notes"]) == ("42", "checked twice")


def test_a_section_runs_over_several_lines() -> None:
    assert sections("Result: first\nsecond\nNotes: n")["result"] == "first\nsecond"


def test_an_unlabelled_reply_is_the_result_whole() -> None:
    assert report("I counted 42 stars in the sky.")["result"] == "I counted 42 stars in the sky."


def test_with_nothing_from_the_model_the_childs_final_reply_is_the_result() -> None:
    assert report("")["result"] == "child final"


def test_with_an_empty_final_reply_the_latest_tool_result_is_the_result() -> None:
    assert report("", child(reply=""), tool_result='{"count": 3}')["result"] == '{"count": 3}'


def test_status_comes_from_the_run_not_from_the_text() -> None:
    failed = child(RunStatus.ERROR, error="disk full")
    got = report("Result: all good, success!\nNotes: none", failed)
    assert got["status"] == "error"
    assert got["notes"] == "none\n- Error: disk full"
    assert status_of(None) == "unknown"
    assert report("Result: x", child(RunStatus.TIMEOUT))["status"] == "timeout"


def test_empty_notes_say_none() -> None:
    assert report("Result: 42")["notes"] == "- (none)"


def test_the_stats_line_carries_runtime_tokens_cost_and_where_to_look() -> None:
    text = normalize(AnnounceInputs(child(), "Result: 42", None, None, "/t.jsonl"))
    stats = text.split("\n")[-1]
    assert stats.startswith("Stats: runtime 1m12s • tokens 1.2k (in 800 / out 400) • est $0.01 • ")
    assert stats.endswith("transcript /t.jsonl")


@pytest.mark.parametrize(
    ("usage", "shown"),
    [
        (Usage(), "tokens ? • est ?"),
        (Usage(input_tokens=800, output_tokens=400), "tokens 1.2k (in 800 / out 400) • est ?"),
        (Usage(cost_usd=0.5), "tokens ? • est $0.50"),
        (Usage(input_tokens=10, output_tokens=0, cost_usd=0.0), "tokens 10 (in 10 / out 0) • est $0.00"),
    ],
)
def test_unknown_tokens_and_cost_print_a_question_mark(usage: Usage, shown: str) -> None:
    run = child().model_copy(update={"usage": usage})
    text = normalize(AnnounceInputs(run, "Result: 42", None, None, "/t.jsonl"))
    assert f"runtime 1m12s • {shown} • sessionKey" in text


def test_with_no_child_run_every_figure_is_unknown() -> None:
    text = normalize(AnnounceInputs(None, "Result: 42", None, None, "/t.jsonl"))
    assert "Stats: runtime ? • tokens ? • est ? • sessionKey ? • sessionId ? • transcript /t.jsonl" in text
