"""shared/tools/list.py: docs/contract.md §2 filters, clamps, row shape and channel rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.clock import FixedClock
from shared.config import Config
from shared.inbound import receive
from shared.models import InboundMessageParams
from shared.store import Store
from shared.tools.context import ToolContext
from shared.tools.list_schema import SessionsListResult
from shared.tools.registry import TOOLS
from workers.testing import InlineDispatcher, drain_runs


def message(ctx: ToolContext, key: str, text: str = "hi", **route: str) -> None:
    session = ToolContext.for_caller(ctx.config, ctx.store, ctx.dispatcher, key)
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


def test_kinds_filter_with_unknown_values_dropped(ctx: ToolContext, clock: FixedClock) -> None:
    for key in ("cron:a", "hook:b", "main"):
        clock.advance(1)
        message(ctx, key)
    assert [r.key for r in listing(ctx, kinds=[" CRON ", "bogus", "main"]).sessions] == [
        "main",
        "agent:main:cron:a",
    ]
    assert listing(ctx, kinds=["bogus"]).count == 3


def test_limit_defaults_to_50_and_is_clamped(ctx: ToolContext, clock: FixedClock) -> None:
    for i in range(55):
        clock.advance(0.001)
        message(ctx, f"cron:{i}")
    assert listing(ctx).count == 50
    assert listing(ctx, limit=0).count == 1
    assert listing(ctx, limit=500).count == 55


def test_active_minutes_keeps_only_recent_sessions(ctx: ToolContext, clock: FixedClock) -> None:
    message(ctx, "cron:old")
    clock.advance(3600)
    message(ctx, "cron:new")
    assert [r.key for r in listing(ctx, activeMinutes=30).sessions] == ["agent:main:cron:new"]


def test_counts_written_as_fractional_numbers_are_floored(ctx: ToolContext, clock: FixedClock) -> None:
    dispatcher = ctx.dispatcher
    assert isinstance(dispatcher, InlineDispatcher)
    message(ctx, "cron:old", "first")
    drain_runs(ctx.store, ctx.config, dispatcher)
    clock.advance(90)
    message(ctx, "cron:new", "second")
    drain_runs(ctx.store, ctx.config, dispatcher)
    clock.advance(30)
    # activeMinutes 1.9 is 1 minute: only the session written 30 s ago.
    rows = listing(ctx, limit=2.5, activeMinutes=1.9, messageLimit=1.5).sessions
    assert [r.key for r in rows] == ["agent:main:cron:new"]
    assert [m["content"][0]["text"] for m in rows[0].messages or []] == ["echo: second"]
    assert listing(ctx, limit=1.99).count == 1


def test_a_count_that_is_no_finite_number_is_refused_naming_the_field(ctx: ToolContext) -> None:
    with pytest.raises(ValidationError, match=r"limit\n.*finite"):
        TOOLS["sessions_list"].invoke(ctx, {"limit": float("nan")})


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
        "main": "webchat",
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
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    message(ctx, "cron:a", "one")
    message(ctx, "cron:a", "two")
    drain_runs(store, config, dispatcher)
    row = listing(ctx, messageLimit=3).sessions[0]
    assert [m["content"][0]["text"] for m in row.messages or []] == ["echo: one", "two", "echo: two"]
    assert listing(ctx).sessions[0].messages is None
    assert len(listing(ctx, messageLimit=99).sessions[0].messages or []) == 4


def test_an_index_entry_whose_session_vanished_is_skipped(ctx: ToolContext, store: Store) -> None:
    message(ctx, "cron:a")
    message(ctx, "cron:b")
    store.redis.delete(store.keys.session("agent:main:cron:b"))
    assert [r.key for r in listing(ctx, limit=1).sessions] == ["agent:main:cron:a"]


def test_listed_messages_are_redacted_and_cut_as_history_is(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    message(ctx, "cron:a", "use sk-abcdefghijklmnopqrstuvwxyz1234 " + "x" * 5000)
    drain_runs(store, config, dispatcher)
    row = listing(ctx, messageLimit=2).sessions[0]
    listed, _reply = row.messages or []
    text = listed["content"][0]["text"]
    assert text.startswith("use sk-abc…1234 x")
    assert text.endswith("\n…(truncated)…")
    assert len(text) == 4000 + len("\n…(truncated)…")
