"""shared/tools/list.py: docs/contract.md §2 filters, clamps, row shape and channel rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.commands.inbound import receive
from clawbus.shared.config import Config
from clawbus.shared.runner.tool_schemas import parameters
from clawbus.shared.store import Store
from clawbus.shared.tools.history_view import text_of
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.list_schema import SessionsListResult
from clawbus.shared.wire.models import InboundMessageParams, ToolFailure
from clawbus.workers.testing import InlineDispatcher, World


def message(ctx: ToolContext, key: str, text: str = "hi", **route: str) -> None:
    session = ToolContext.for_caller(ctx, key)
    receive(session, InboundMessageParams(message=text, timeout_seconds=0, **route))  # type: ignore[arg-type]


def listing(ctx: ToolContext, **args: object) -> SessionsListResult:
    result = TOOLS["sessions_list"].invoke(ctx, args)
    assert isinstance(result, SessionsListResult)
    return result


def test_rows_are_newest_first(ctx: ToolContext, clock: FixedClock) -> None:
    for key in ("cron:a", "hook:b", "discord:group:c"):
        clock.advance(1)
        message(ctx, key)
    assert [r.key for r in listing(ctx).sessions] == [
        "agent:main:discord:group:c",
        "agent:main:hook:b",
        "agent:main:cron:a",
    ]


def test_kinds_are_lowercased_and_an_unknown_kind_matches_nothing(
    ctx: ToolContext, clock: FixedClock
) -> None:
    for key in ("cron:a", "hook:b", "main"):
        clock.advance(1)
        message(ctx, key)
    assert [r.key for r in listing(ctx, kinds=[" CRON ", "bogus", "main"]).sessions] == [
        "agent:main:main",
        "agent:main:cron:a",
    ]
    assert listing(ctx, kinds=["bogus"]).count == 0
    assert listing(ctx, kinds="cron").count == 1
    assert listing(ctx, kinds=[]).count == 3


def test_limit_defaults_to_100_is_cut_at_200_and_pages_with_next_offset(
    ctx: ToolContext, clock: FixedClock
) -> None:
    for i in range(205):
        clock.advance(0.001)
        message(ctx, f"cron:{i}")
    first = listing(ctx)
    assert (first.count, first.has_more, first.next_offset, first.limit_applied) == (100, True, 100, 100)
    assert listing(ctx, limit=500).limit_applied == 200
    last = listing(ctx, limit=200, offset=100)
    assert (last.count, last.has_more, last.next_offset) == (105, False, None)
    assert last.sessions[-1].key == "agent:main:cron:0"
    assert listing(ctx, offset=999).count == 0


@pytest.mark.parametrize("limit", [0, -1, 1.5, "abc", "5abc", True, [5], 2**60])
def test_a_limit_that_is_no_positive_whole_number_is_refused_in_the_releases_words(
    ctx: ToolContext, limit: object
) -> None:
    with pytest.raises(ValidationError, match="limit must be a positive integer"):
        TOOLS["sessions_list"].invoke(ctx, {"limit": limit})


def test_numeric_strings_are_counts_and_blank_ones_are_absent(ctx: ToolContext, clock: FixedClock) -> None:
    for i in range(12):
        clock.advance(0.001)
        message(ctx, f"cron:{i}")
    assert listing(ctx, limit="5").count == 5
    assert listing(ctx, limit=" 7 ").count == 7
    assert listing(ctx, limit="1e1").count == 10
    assert listing(ctx, limit="").limit_applied == 100


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ({"offset": -1}, "offset must be a non-negative integer"),
        ({"activeMinutes": 0}, "activeMinutes must be a positive integer"),
        ({"messageLimit": -1}, "messageLimit must be a non-negative integer"),
    ],
)
def test_other_counts_are_refused_in_the_releases_words(
    ctx: ToolContext, args: dict[str, object], text: str
) -> None:
    with pytest.raises(ValidationError, match=text):
        TOOLS["sessions_list"].invoke(ctx, args)


def test_unknown_arguments_are_ignored(ctx: ToolContext) -> None:
    message(ctx, "cron:a")
    assert listing(ctx, bogus=1).count == 1


def test_channel_follows_the_spec_rules(ctx: ToolContext, clock: FixedClock) -> None:
    message(ctx, "cron:nightly")
    message(ctx, "discord:group:42")
    message(ctx, "telegram:direct:bob", channel="telegram", to="bob")
    message(ctx, "main", channel="webchat", to="u1")
    message(ctx, "agent:main:misc")
    channels = {r.key: r.channel for r in listing(ctx).sessions}
    assert channels == {
        "agent:main:cron:nightly": "internal",
        "agent:main:discord:group:42": "discord",
        "agent:main:telegram:direct:bob": "telegram",
        "agent:main:main": "webchat",
        "agent:main:misc": "unknown",
    }


def test_rows_carry_delivery_context_and_transcript_path(ctx: ToolContext, config: Config) -> None:
    message(ctx, "main", channel="webchat", to="u1", account_id="acct")
    row = listing(ctx).sessions[0]
    assert row.delivery_context is not None
    assert row.delivery_context.wire() == {"channel": "webchat", "to": "u1", "accountId": "acct"}
    assert row.last_to == "u1"
    assert row.transcript_path == f"{config.store_url()}/agents/main/sessions/{row.session_id}.jsonl"
    assert "deliveryContext" not in listing(ctx, kinds=["cron"]).wire()


def test_message_limit_attaches_the_last_messages_without_tool_results(
    ctx: ToolContext, inline: World
) -> None:
    message(ctx, "cron:a", "one")
    message(ctx, "cron:a", "two")
    inline.drain_runs()
    row = listing(ctx, messageLimit=3).sessions[0]
    assert [text_of(m) for m in row.messages or []] == ["echo: one", "two", "echo: two"]
    # Shown as history shows them, with the usage of the step that wrote an assistant's.
    assert row.messages is not None
    assert (
        row.messages[0]["usage"]["totalTokens"]
        == row.messages[0]["usage"]["input"] + row.messages[0]["usage"]["output"]
    )
    assert listing(ctx).sessions[0].messages is None
    assert len(listing(ctx, messageLimit=99).sessions[0].messages or []) == 4


def test_an_index_entry_whose_session_vanished_is_skipped(ctx: ToolContext, store: Store) -> None:
    message(ctx, "cron:a")
    message(ctx, "cron:b")
    store.redis.delete(store.keys.session("agent:main:cron:b"))
    assert [r.key for r in listing(ctx, limit=1).sessions] == ["agent:main:cron:a"]


def test_listed_messages_are_redacted_and_cut_as_history_is(ctx: ToolContext, inline: World) -> None:
    message(ctx, "cron:a", "use sk-abcdefghijklmnopqrstuvwxyz1234 " + "x" * 5000)
    inline.drain_runs()
    row = listing(ctx, messageLimit=2).sessions[0]
    listed, _reply = row.messages or []
    text = text_of(listed)
    assert text.startswith("use sk-abc…1234 x")
    assert text.endswith("\n…(truncated)…")
    assert len(text) == 4000 + len("\n…(truncated)…")


def test_rows_carry_the_releases_fields_for_a_main_session_and_its_child(
    ctx: ToolContext, config: Config, inline: World
) -> None:
    message(ctx, "main", "hello")
    inline.drain_runs()
    spawned = TOOLS["sessions_spawn"].invoke(ctx, {"task": "count", "label": "counter"}).wire()
    inline.drain_runs()
    rows = {row.key: row.wire() for row in listing(ctx).sessions}
    main, child = rows["agent:main:main"], rows[spawned["childSessionKey"]]
    assert {k: main[k] for k in ("agentId", "kind", "archived", "pinned", "displayName", "status")} == {
        "agentId": "main",
        "kind": "main",
        "archived": False,
        "pinned": False,
        "displayName": "main",
        "status": "done",
    }
    assert main["abortedLastRun"] is False
    assert main["childSessions"] == [spawned["childSessionKey"]]
    assert child["parentSessionKey"] == "agent:main:main"
    assert child["createdActor"] == {
        "type": "agent",
        "id": "main",
        "identity": {"type": "agent", "id": "main"},
    }
    assert child["owner"] == {"actor": child["createdActor"]}
    assert child["displayName"] == "counter"
    assert child["workspaceDir"] == child["spawnedWorkspaceDir"] == str(config.workspace("main"))
    assert "abortedLastRun" not in child
    assert child["model"] == "echo"
    # A send to the child is a run of the usual kind: from then on its row says it, as the release's.
    TOOLS["sessions_send"].invoke(
        ctx, {"sessionKey": spawned["childSessionKey"], "message": "hi", "timeoutSeconds": 0}
    )
    inline.drain_runs()
    child = {row.key: row.wire() for row in listing(ctx).sessions}[spawned["childSessionKey"]]
    assert child["abortedLastRun"] is False


def test_label_and_agent_id_keep_only_the_sessions_asked_for(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    message(ctx, "cron:a")
    message(ctx, "agent:research:cron:b")
    TOOLS["sessions_spawn"].invoke(ctx, {"task": "count", "label": "counter"})
    labelled = listing(ctx, label="counter")
    assert [row.label for row in labelled.sessions] == ["counter"]
    assert [row.key for row in listing(ctx, agentId="research").sessions] == ["agent:research:cron:b"]
    assert listing(ctx, label="nobody").count == 0


def test_search_active_only_and_exclude_subagents_narrow_the_listing(ctx: ToolContext, inline: World) -> None:
    message(ctx, "discord:group:ops-room")
    message(ctx, "cron:nightly")
    inline.drain_runs()
    spawned = TOOLS["sessions_spawn"].invoke(ctx, {"task": "count", "label": "counter"}).wire()
    assert [row.key for row in listing(ctx, search="OPS").sessions] == ["agent:main:discord:group:ops-room"]
    assert [row.key for row in listing(ctx, activeOnly=True).sessions] == [spawned["childSessionKey"]]
    assert spawned["childSessionKey"] not in [row.key for row in listing(ctx, excludeSubagents=True).sessions]
    assert listing(ctx, pinned=True).count == 0


def test_archived_sessions_are_listed_only_when_asked_for(
    ctx: ToolContext, store: Store, clock: FixedClock, inline: World
) -> None:
    message(ctx, "cron:kept")
    child = TOOLS["sessions_spawn"].invoke(ctx, {"task": "count"}).wire()["childSessionKey"]
    inline.drain()
    entry = store.sessions.get(child)
    assert entry is not None
    store.sessions.archive(entry, clock.now_ms())
    assert child not in [row.key for row in listing(ctx).sessions]
    archived = listing(ctx, archived=True).sessions
    assert ([row.key for row in archived], archived[0].archived) == ([child], True)
    assert {child, "agent:main:cron:kept"} <= {row.key for row in listing(ctx, archived="all").sessions}


def test_titles_and_last_message_previews_on_request(ctx: ToolContext, inline: World) -> None:
    message(ctx, "cron:titled", "write the weekly report about the fleet and its workers please " * 2)
    inline.drain_runs()
    plain = listing(ctx).sessions[0]
    assert (plain.derived_title, plain.last_message_preview) == (None, None)
    row = listing(ctx, includeDerivedTitles=True, includeLastMessage=True).sessions[0]
    assert row.derived_title == "write the weekly report about the fleet and its workers…"
    assert row.last_message_preview is not None
    assert row.last_message_preview.startswith("echo: write the weekly report")
    message(ctx, "main", "hello")
    inline.drain_runs()
    titles = {r.key: r.derived_title for r in listing(ctx, includeDerivedTitles=True).sessions}
    assert titles["agent:main:main"] == "main"  # its displayName, as the release titles it


def test_rows_say_when_the_latest_run_started_ended_and_how_long_it_ran(
    ctx: ToolContext, clock: FixedClock, inline: World
) -> None:
    message(ctx, "cron:first")
    first_at = clock.now_ms()
    inline.drain_runs()
    clock.advance(5)
    message(ctx, "cron:second")
    [second, first] = [row.wire() for row in listing(ctx).sessions]
    assert (first["startedAt"], first["endedAt"], first["runtimeMs"]) == (first_at, first_at, 0)
    # Queued, not started: nothing to say yet.
    assert not {"startedAt", "endedAt", "runtimeMs"} & set(second)


def test_owner_creator_and_workspace_keep_the_sessions_a_spawner_made(
    ctx: ToolContext, config: Config, inline: World
) -> None:
    message(ctx, "cron:a")
    mine = TOOLS["sessions_spawn"].invoke(ctx, {"task": "count", "label": "mine"}).wire()["childSessionKey"]
    research = inline.context("agent:research:main")
    theirs = TOOLS["sessions_spawn"].invoke(research, {"task": "count", "label": "theirs"}).wire()
    inline.drain_runs()

    def keys(**args: object) -> list[str]:
        return sorted(row.key for row in listing(ctx, **args).sessions)

    assert keys(ownerId="main") == keys(creatorId=" main ") == [mine]
    assert keys(ownerId="research", creatorId="research") == [theirs["childSessionKey"]]
    assert keys(ownerId="main", creatorId="research") == []
    # Exact, as the release matches it: an agent id written otherwise is another id.
    assert keys(ownerId="Main") == []
    assert keys(workspaceDir=str(config.workspace("main"))) == [mine]
    assert keys(workspaceDir=str(config.workspace("main")) + "/") == []


@pytest.mark.parametrize("name", ["ownerId", "creatorId", "workspaceDir", "projectId", "relationship"])
@pytest.mark.parametrize("value", ["  ", None, 7])
def test_a_filter_sent_empty_is_required_in_the_releases_words(
    ctx: ToolContext, name: str, value: object
) -> None:
    with pytest.raises(ValidationError, match=f"{name} required"):
        TOOLS["sessions_list"].invoke(ctx, {name: value})


def _invoke_refused(ctx: ToolContext, args: dict[str, object]) -> str:
    result = TOOLS["sessions_list"].invoke(ctx, args)
    assert isinstance(result, ToolFailure), result
    assert result.status == "error"
    return result.error or ""


@pytest.mark.parametrize(
    ("args", "starts"),
    [
        ({"relationship": "owned"}, "relationship is not supported by clawbus: it knows no user"),
        ({"relationship": "involving"}, "relationship is not supported by clawbus"),
        ({"projectId": "p1"}, "projectId is not supported by clawbus: it has no projects"),
        ({"group": "reviews"}, "group is not supported by clawbus: it has no session groups"),
        ({"group": ""}, "group is not supported by clawbus"),
    ],
)
def test_a_filter_clawbus_cannot_answer_is_refused_by_name_never_dropped(
    ctx: ToolContext, args: dict[str, object], starts: str
) -> None:
    message(ctx, "cron:a")
    assert _invoke_refused(ctx, args).startswith(starts)


def test_an_unknown_relationship_is_refused_in_the_releases_words(ctx: ToolContext) -> None:
    assert _invoke_refused(ctx, {"relationship": "friends"}) == (
        "relationship must be owned, created, or involving"
    )


def test_a_group_that_is_no_text_is_ignored_as_the_release_ignores_it(ctx: ToolContext) -> None:
    message(ctx, "cron:a")
    assert listing(ctx, group=3).count == listing(ctx).count


def test_a_model_is_not_offered_the_filters_clawbus_refuses() -> None:
    offered = parameters(TOOLS["sessions_list"])["properties"]
    assert {"ownerId", "creatorId", "workspaceDir"} <= offered.keys()
    assert not {"relationship", "projectId", "group"} & offered.keys()
