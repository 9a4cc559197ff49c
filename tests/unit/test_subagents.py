"""shared/domain/subagents.py: the sub-agent tool policy and its roles (docs/contract.md §6 and §10, the
release's docs/tools/subagents/tool-policy.md), and the normalized report (docs/contract.md §6): the
child's latest reply as its result, its fallbacks and figures."""

from __future__ import annotations

from typing import Any

import pytest

from clawbus.shared.config import Config
from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.domain.subagents import ReportInputs, normalize, role_of, status_of, tool_set
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.wire.models import Run, RunStatus, SpawnRole, Usage
from tests.conftest import make_config

CHILD = "agent:main:subagent:4f3c2a10-0000-4000-8000-000000000000"
# What a sub-agent below the depth cap keeps of clawbus's tools: those that run its own tree.
ORCHESTRATOR = ["sessions_history", "sessions_list", "sessions_spawn", "sessions_yield", "subagents"]


def tools_of(role: SpawnRole | None, **subagent_tools: Any) -> list[str]:
    config = make_config({"tools": {"subagents": {"tools": subagent_tools}}})
    return tool_set(config, TOOLS, role)


def depth_config(max_spawn_depth: int | None = None) -> Config:
    if max_spawn_depth is None:
        return make_config()
    return make_config({"agents": {"defaults": {"subagents": {"maxSpawnDepth": max_spawn_depth}}}})


def role_at(config: Config, depth: int | None, stored: SpawnRole | None = None) -> SpawnRole:
    entry = new_entry(config, CHILD, 0).model_copy(update={"spawn_depth": depth, "role": stored})
    return role_of(config, CHILD, entry)


# --- the tool policy ------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["orchestrator", "leaf"])
def test_subagent_allow_cannot_grant_sessions_send(role: SpawnRole) -> None:
    assert "sessions_send" not in tools_of(role, allow=["sessions_send", "sessions_list"])


@pytest.mark.parametrize("tool", ["sessions_send", "agents_list", "session_status"])
def test_no_allow_or_also_allow_grants_a_hard_denied_tool(tool: str) -> None:
    assert tool not in tools_of("orchestrator", allow=[tool])
    assert tool not in tools_of("orchestrator", allow=[], alsoAllow=[tool])
    assert tool not in tools_of("orchestrator", allow=["*"])
    assert tool not in tools_of("orchestrator", allow=["group:openclaw"])


def test_below_the_cap_a_sub_agent_keeps_the_tools_that_run_its_tree_and_no_other_session_tool() -> None:
    assert tools_of("orchestrator") == ORCHESTRATOR


def test_a_leaf_at_the_cap_keeps_only_sessions_yield() -> None:
    assert tools_of("leaf") == ["sessions_yield"]


def test_allow_cannot_give_a_leaf_back_what_the_cap_takes() -> None:
    assert tools_of("leaf", allow=["sessions_spawn", "subagents", "sessions_list", "sessions_yield"]) == [
        "sessions_yield"
    ]


def test_no_role_counts_as_a_leaf() -> None:
    assert tools_of(None) == tools_of("leaf")


def test_allow_only_narrows_what_is_left() -> None:
    assert tools_of("orchestrator", allow=["sessions_list", "sessions_send"]) == ["sessions_list"]


def test_deny_wins_over_allow() -> None:
    assert tools_of("orchestrator", allow=["sessions_list", "subagents"], deny=["subagents"]) == [
        "sessions_list"
    ]


def test_an_empty_allow_list_narrows_nothing_as_in_the_release() -> None:
    assert tools_of("orchestrator", allow=[]) == ORCHESTRATOR
    assert tools_of("orchestrator", allow=["  "]) == ORCHESTRATOR


def test_also_allow_widens_an_allow_list_and_alone_changes_nothing() -> None:
    assert tools_of("orchestrator", allow=["subagents"], alsoAllow=["sessions_list"]) == [
        "sessions_list",
        "subagents",
    ]
    assert tools_of("orchestrator", alsoAllow=["sessions_list"]) == ORCHESTRATOR


@pytest.mark.parametrize(
    ("deny", "left"),
    [
        (["sessions_*"], ["subagents"]),
        (["group:sessions"], []),
        (["SubAgents"], ["sessions_history", "sessions_list", "sessions_spawn", "sessions_yield"]),
        (["*"], []),
    ],
)
def test_deny_reads_globs_groups_and_any_case_as_the_release(deny: list[str], left: list[str]) -> None:
    assert tools_of("orchestrator", deny=deny) == left


# --- roles ----------------------------------------------------------------------------------------------


def test_below_the_default_cap_of_five_a_sub_agent_is_an_orchestrator() -> None:
    config = depth_config()
    assert [role_at(config, depth) for depth in (1, 4, 5)] == ["orchestrator", "orchestrator", "leaf"]


def test_at_a_cap_of_one_a_direct_child_is_a_leaf() -> None:
    assert role_at(depth_config(1), 1) == "leaf"


def test_the_role_follows_the_cap_as_configured_now_not_as_written_at_spawn() -> None:
    assert role_at(depth_config(2), 2, stored="orchestrator") == "leaf"
    assert role_at(depth_config(3), 2, stored="leaf") == "orchestrator"


def test_a_sub_agent_with_no_depth_written_is_at_depth_one() -> None:
    assert role_at(depth_config(1), None) == "leaf"
    assert role_of(depth_config(2), CHILD, None) == "orchestrator"


def test_an_agents_own_cap_decides_its_sub_agents_role() -> None:
    config = make_config(
        {"agents": {"list": [{"id": "main", "default": True, "subagents": {"maxSpawnDepth": 1}}]}}
    )
    assert role_at(config, 1) == "leaf"


# --- the announce ---------------------------------------------------------------------------------------


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


def report(run: Run | None = None, tool_result: str | None = None) -> dict[str, str]:
    text = normalize(ReportInputs(run if run is not None else child(), tool_result, None, "/t.jsonl"))
    head, _, stats = text.rpartition("\nStats: ")
    assert stats.endswith("transcript /t.jsonl")
    status, _, rest = head.partition("\nResult: ")
    result, _, notes = rest.partition("\nNotes: ")
    return {"status": status.removeprefix("Status: "), "result": result, "notes": notes}


def test_the_childs_latest_reply_is_the_result_as_it_wrote_it() -> None:
    # No model step on the child and no parsing of labels: the release hands on the reply whole.
    reply = "Result: 42\nNotes: checked twice"
    text = normalize(ReportInputs(child(reply=reply), None, None, "/t.jsonl"))
    assert text.startswith(f"Status: success\nResult: {reply}\nNotes: - (none)\nStats: ")


def test_with_an_empty_final_reply_the_latest_tool_result_is_the_result() -> None:
    assert report(child(reply=""), tool_result='{"count": 3}')["result"] == '{"count": 3}'


def test_with_no_reply_and_no_tool_result_the_result_says_so() -> None:
    assert report(child(reply=None))["result"] == "(no result)"


def test_status_comes_from_the_run_not_from_the_text() -> None:
    failed = child(RunStatus.ERROR, reply="all good, success!", error="disk full")
    got = report(failed)
    assert got["status"] == "error"
    assert got["notes"] == "- Error: disk full"
    assert status_of(None) == "unknown"
    assert report(child(RunStatus.TIMEOUT))["status"] == "timeout"


def test_empty_notes_say_none() -> None:
    assert report()["notes"] == "- (none)"


def test_the_stats_line_carries_runtime_tokens_cost_and_where_to_look() -> None:
    text = normalize(ReportInputs(child(), None, None, "/t.jsonl"))
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
    text = normalize(ReportInputs(run, None, None, "/t.jsonl"))
    assert f"runtime 1m12s • {shown} • sessionKey" in text


def test_with_no_child_run_every_figure_is_unknown() -> None:
    text = normalize(ReportInputs(None, None, None, "/t.jsonl"))
    assert "Stats: runtime ? • tokens ? • est ? • sessionKey ? • sessionId ? • transcript /t.jsonl" in text


def test_a_report_says_how_many_attempts_were_lost_with_a_worker() -> None:
    run = child().model_copy(update={"interrupted": 2})
    assert report(run)["notes"] == "- Interrupted: 2 attempts lost with a worker, retried"
    failed = child(RunStatus.ERROR, error="disk full").model_copy(update={"interrupted": 1})
    assert (
        report(failed)["notes"] == "- Error: disk full\n- Interrupted: 1 attempt lost with a worker, retried"
    )
