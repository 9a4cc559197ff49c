"""The differential harness itself, without the gateway: what it masks, compares, documents and reports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from clawbus.shared.config import load_config
from tests.differential import sse
from tests.differential.answer import Answer
from tests.differential.calls import TOKEN, lookup, payload_of
from tests.differential.clawbus_side import clawbus_config, not_used
from tests.differential.compare import Difference, compare
from tests.differential.documented import DOCUMENTED, Documented
from tests.differential.normalize import Masked, normalize
from tests.differential.report import Section, judge, render
from tests.differential.scenario import SCENARIO, calls

ROOTS = {"/tmp/run/state": "<state>"}


def answer(body: Any, status: int = 200, media_type: str = "application/json") -> Answer:
    return Answer(status, media_type, body, normalize(body, ROOTS))


def invoke_result(details: dict[str, Any]) -> dict[str, Any]:
    """The gateway's success envelope: the details, and their JSON as the model's text."""
    return {
        "ok": True,
        "result": {"content": [{"type": "text", "text": json.dumps(details)}], "details": details},
    }


def test_the_scenario_has_enough_distinct_calls() -> None:
    names = [call.name for call in calls()]
    assert len(names) >= 85
    assert len(set(names)) == len(names)
    assert len(SCENARIO) > len(names)  # and waits between them


def test_ids_clocks_durations_and_folders_are_masked() -> None:
    body = {
        "runId": "46347993-c5a7-4d88-8cb4-fb25d2f2f9f1",
        "key": "agent:main:subagent:f7aaadc2-8525-4b5b-8af7-c60a02f9abc3",
        "updatedAt": 1795767929424,
        "created": 1795767939,
        "runtimeMs": 416,
        "runtime": "416ms",
        "responseId": "chatcmpl-3312d5f5b001",
        "id": "chatcmpl_ce84226b-a9a0-4bb2-ba09-64d53c4e1920",
        "transcriptPosition": {"source": "BJvZq4", "rawSeq": 4},
        "workspaceDir": "/tmp/run/state/workspace",
        "statusText": "Current time: Friday 8:25 AM\n⏱️ Uptime: gateway 17s\n🧵 Session: main • duration 6s • updated 1m ago",
        "contextTokens": 128000,
    }
    assert normalize(body, ROOTS) == {
        "runId": "<uuid>",
        "key": "agent:main:subagent:<uuid>",
        "updatedAt": Masked("timestamp", "number"),
        "created": Masked("timestamp", "number"),
        "runtimeMs": Masked("duration", "number"),
        "runtime": "<duration>",
        "responseId": Masked("responseId", "string"),
        "id": "<chatcmpl-id>",
        "transcriptPosition": Masked("transcriptPosition", "object"),
        "workspaceDir": "<state>/workspace",
        "statusText": "Current time: <clock>\n⏱️ Uptime: <uptime>\n🧵 Session: main • duration <duration> • updated <age>",
        "contextTokens": 128000,
    }


def test_the_same_answer_with_other_ids_and_times_is_the_same() -> None:
    first = invoke_result({"runId": "46347993-c5a7-4d88-8cb4-fb25d2f2f9f1", "updatedAt": 1795767929424})
    second = invoke_result({"runId": "00000000-c5a7-4d88-8cb4-fb25d2f2f9f1", "updatedAt": 1795767999999})
    assert compare(answer(first), answer(second)) == []


def test_missing_extra_type_and_value_are_told_apart() -> None:
    theirs = invoke_result({"count": 1, "hasMore": False, "limitApplied": 100})
    ours = invoke_result({"count": "1", "hasMore": True, "transcriptPath": "x"})
    assert compare(answer(theirs), answer(ours)) == [
        Difference("missing", "result.details.limitApplied"),
        Difference("extra", "result.details.transcriptPath"),
        Difference("type", "result.details.count", "gateway number, clawbus string"),
        Difference("value", "result.details.hasMore", "gateway false, clawbus true"),
    ]


def test_a_bare_result_is_compared_with_the_details() -> None:
    theirs = invoke_result({"count": 0, "sessions": []})
    ours = {"ok": True, "result": {"count": 0, "sessions": []}}
    assert compare(answer(theirs), answer(ours)) == [
        Difference("shape", "", "gateway ok+result{content,details}, clawbus ok+result"),
        Difference("content", "result.content[0].text", "gateway the JSON of details, clawbus absent"),
    ]


def test_error_texts_and_statuses_are_compared_exactly() -> None:
    theirs = answer({"ok": False, "error": {"type": "tool_error", "message": "message required"}}, 400)
    ours = answer({"ok": False, "error": {"type": "tool_error", "message": "message: Field required"}}, 422)
    assert compare(theirs, ours) == [
        Difference("status", "", "gateway 400, clawbus 422"),
        Difference("text", "error.message", 'gateway "message required", clawbus "message: Field required"'),
    ]


def test_long_texts_are_shown_from_where_they_part() -> None:
    common = "active subagents:\n(none)\n\nrecent (last <duration>):\n1. "
    theirs = invoke_result({"text": common + "diff-child (fake-model) done"})
    ours = invoke_result({"text": common + "diff-child (fake/fake-model) done"})
    assert compare(answer(theirs), answer(ours)) == [
        Difference(
            "text",
            "result.details.text",
            'from character 51: gateway ..."\\n1. diff-child (fake-model) done", '
            'clawbus ..."\\n1. diff-child (fake/fake-model) done"',
        )
    ]


def test_lists_of_other_lengths_compare_their_rows_keys() -> None:
    theirs = invoke_result({"sessions": [{"key": "a", "label": "x"}, {"key": "b"}]})
    ours = invoke_result({"sessions": [{"key": "a", "transcriptPath": "p"}]})
    assert compare(answer(theirs), answer(ours)) == [
        Difference("length", "result.details.sessions", "gateway 2, clawbus 1"),
        Difference("missing", "result.details.sessions[*].label"),
        Difference("extra", "result.details.sessions[*].transcriptPath"),
    ]


def test_a_status_card_is_its_content_text() -> None:
    details = {"ok": True, "statusText": "🦞 OpenClaw"}
    card = {"ok": True, "result": {"content": [{"type": "text", "text": "🦞 OpenClaw"}], "details": details}}
    assert compare(answer(card), answer(invoke_result(details))) == [
        Difference(
            "content", "result.content[0].text", "gateway details.statusText, clawbus the JSON of details"
        )
    ]


def test_a_call_that_could_not_be_made_is_a_harness_difference() -> None:
    made = answer(invoke_result({"count": 0}))
    assert compare(made, Answer(0, note="unresolved reference spawn.childSessionKey")) == [
        Difference("harness", "", "clawbus: unresolved reference spawn.childSessionKey")
    ]


def test_a_stream_is_its_events_with_text_deltas_joined() -> None:
    def chunk(delta: dict[str, Any]) -> str:
        return "data: " + json.dumps({"id": "c", "choices": [{"index": 0, "delta": delta}]}) + "\n\n"

    text = chunk({"role": "assistant"}) + chunk({"content": "FAKE"}) + chunk({"content": "-REPLY"})
    assert sse.parse(text + "data: [DONE]\n\n") == [
        {"data": {"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}},
        {"data": {"id": "c", "choices": [{"index": 0, "delta": {"content": "FAKE-REPLY"}}]}},
        {"data": "[DONE]"},
    ]
    named = 'event: response.output_text.delta\ndata: {"delta": "a"}\n\nevent: response.output_text.delta\ndata: {"delta": "b"}\n\n'
    assert sse.parse(named) == [{"event": "response.output_text.delta", "data": {"delta": "ab"}}]


def test_documented_entries_match_calls_and_paths_by_pattern() -> None:
    entry = Documented(
        "sessions_list*", "result.details.sessions[*].transcriptPath", "extra", "transcript-path"
    )
    assert entry.covers(
        "sessions_list_final", Difference("extra", "result.details.sessions[3].transcriptPath")
    )
    assert entry.covers(
        "sessions_list_final", Difference("extra", "result.details.sessions[*].transcriptPath")
    )
    assert not entry.covers(
        "sessions_list_final", Difference("missing", "result.details.sessions[3].transcriptPath")
    )
    assert not entry.covers("agents_list", Difference("extra", "result.details.sessions[0].transcriptPath"))
    anywhere = Documented("*", "**.runId", "extra", "run-ids")
    assert anywhere.covers("x", Difference("extra", "result.details.messages[2].runId"))


def test_verdicts_and_the_report() -> None:
    registry = (Documented("*", "error.field", "extra", "error-field"),)
    same = judge(1, "agents_list", [], registry=registry)
    documented = judge(2, "sessions_list_limit_zero", [Difference("extra", "error.field")], registry=registry)
    differs = judge(3, "v1_models", [Difference("status", "", "gateway 200, clawbus 404")], registry=registry)
    assert [o.verdict for o in (same, documented, differs)] == ["same", "documented", "differs"]
    sections = [Section("opened", [same, documented, differs], ["models.x: not used by clawbus: why"])]
    report = render(sections, version="2026.9.6")
    assert "**3 calls: 1 same, 1 documented, 1 differs.**" in report
    assert "- `models.x`: not used by clawbus: why" in report
    assert "| 2 | `sessions_list_limit_zero` | documented | extra `error.field` (documented) |" in report
    assert "| 3 | `v1_models` | differs | status: gateway 200, clawbus 404 |" in report
    assert report == render(sections, version="2026.9.6")


def test_a_difference_documented_for_one_configuration_differs_in_another() -> None:
    registry = (Documented("sessions_list*", "result.details.sessions", "length", "visibility", "defaults"),)
    shorter = [Difference("length", "result.details.sessions")]
    assert judge(1, "sessions_list_all", shorter, "defaults", registry).verdict == "documented"
    assert judge(1, "sessions_list_all", shorter, "opened", registry).verdict == "differs"


def test_references_read_the_details_or_a_bare_result() -> None:
    details = {"childSessionKey": "agent:main:subagent:x", "sessions": [{"key": "k"}]}
    assert lookup(payload_of(invoke_result(details)), "childSessionKey") == "agent:main:subagent:x"
    assert lookup(payload_of({"ok": True, "result": details}), "sessions[0].key") == "k"


def test_clawbus_reads_the_gateways_own_file_and_uses_its_agent_model_and_token(tmp_path: Path) -> None:
    path = tmp_path / "openclaw.json"
    path.write_text(json.dumps(clawbus_config("defaults", "http://127.0.0.1:1/v1", tmp_path)))
    unused = not_used(path)
    config = load_config(path, env={})
    assert config.run_model("main") == "fake/fake-model"
    assert config.tools.sessions.visibility == "tree"
    assert TOKEN in config.gateway.auth.tokens
    # What only the gateway has (its log file, control UI, update checks, plugins) is reported, with why.
    assert {line.partition(":")[0] for line in unused} >= {"gateway.controlUi", "update", "plugins"}
    assert not any(line.startswith(("agents.defaults.model", "models.providers.fake.")) for line in unused)


def test_the_opened_configuration_sets_only_the_release_defaults_clawbus_does_not_share(
    tmp_path: Path,
) -> None:
    opened = clawbus_config("opened", "http://127.0.0.1:1/v1", tmp_path)
    plain = clawbus_config("defaults", "http://127.0.0.1:1/v1", tmp_path)
    assert {key for key in opened if opened[key] != plain.get(key)} == {"tools"}


def test_every_documented_reason_is_a_row_of_the_differences_table() -> None:
    """A documented difference says why in docs/contract.md, section 13's table."""
    table = (Path(__file__).parents[2] / "docs" / "contract.md").read_text()
    rows = set(re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M))
    assert {entry.reason for entry in DOCUMENTED} <= rows
