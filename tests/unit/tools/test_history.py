"""shared/tools/history.py: docs/contract.md §3 limits, tool filtering, budget and redaction."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from shared.config import Config
from shared.domain.sessions import new_entry
from shared.store import Store
from shared.tools.registry import TOOLS
from shared.tools.tool_context import ToolContext
from shared.wire.history_schema import SessionsHistoryResult
from shared.wire.models import Message, Role, TextBlock, ToolCallBlock, ToolFailure
from tests.conftest import make_config
from workers.testing import InlineDispatcher, drain_runs

KEY = "agent:main:cron:job"


def put(store: Store, role: Role, text: str) -> None:
    put_message(store, Message.of(role, text, timestamp=1))


def put_message(store: Store, message: Message) -> None:
    if not store.sessions.exists(KEY):
        store.sessions.create(new_entry(make_config(), KEY, 1))
    store.transcripts.append(KEY, [message])


def history(ctx: ToolContext, **args: object) -> SessionsHistoryResult:
    result = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": KEY, **args})
    assert isinstance(result, SessionsHistoryResult)
    return result


def texts(result: SessionsHistoryResult) -> list[str]:
    """Each message's text: a person's is its text, as the release writes it; others are blocks."""
    return [
        m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in result.messages
    ]


def test_tool_results_are_left_out_unless_asked_for(ctx: ToolContext, store: Store) -> None:
    for role, text in [("user", "u"), ("toolResult", "t"), ("tool", "x"), ("assistant", "a")]:
        put(store, role, text)
    assert texts(history(ctx)) == ["u", "a"]
    assert texts(history(ctx, includeTools=True)) == ["u", "t", "x", "a"]


def test_the_limit_counts_kept_messages_and_is_clamped(ctx: ToolContext, store: Store) -> None:
    for i in range(5):
        put(store, "user", str(i))
        put(store, "toolResult", "t")
    assert texts(history(ctx, limit=2)) == ["3", "4"]
    assert texts(history(ctx, limit="1")) == ["4"]
    # Above 1000 the release fails the call; clawbus reads 1000.
    assert len(history(ctx, limit=5000).messages) == 5


@pytest.mark.parametrize("limit", [0, -1, 1.5, "x"])
def test_a_limit_that_is_no_positive_whole_number_is_refused(ctx: ToolContext, limit: object) -> None:
    with pytest.raises(ValidationError, match="limit must be a positive integer"):
        TOOLS["sessions_history"].invoke(ctx, {"sessionKey": KEY, "limit": limit})


@pytest.mark.parametrize("args", [{}, {"sessionKey": ""}, {"sessionKey": "  "}, {"sessionKey": 5}])
def test_a_missing_session_key_is_refused_in_the_releases_words(
    ctx: ToolContext, args: dict[str, object]
) -> None:
    with pytest.raises(ValidationError, match="sessionKey required"):
        TOOLS["sessions_history"].invoke(ctx, args)


def test_long_texts_are_cut_at_4000_characters(ctx: ToolContext, store: Store) -> None:
    put(store, "user", "y" * 5000)
    result = history(ctx)
    assert texts(result)[0] == "y" * 4000 + "\n…(truncated)…"
    assert result.content_truncated
    assert result.truncated


def test_the_whole_result_stays_under_80_kib_by_dropping_the_oldest(ctx: ToolContext, store: Store) -> None:
    for i in range(40):
        put(store, "user", f"{i:02d}" + "z" * 3900)
    result = history(ctx)
    assert result.bytes <= 80 * 1024
    assert result.dropped_messages is True
    assert result.truncated
    assert texts(result)[-1].startswith("39")
    assert len(result.messages) < 40


def test_secrets_are_redacted(ctx: ToolContext, store: Store) -> None:
    put(store, "user", "use sk-abcdefghijklmnopqrstuvwxyz1234 please")
    result = history(ctx)
    assert texts(result) == ["use sk-abc…1234 please"]
    assert result.content_redacted


def test_a_forwarded_message_shows_as_the_releases_with_who_forwarded_it(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    put(store, "user", "first")
    TOOLS["sessions_send"].invoke(ctx, {"sessionKey": KEY, "message": "hello", "timeoutSeconds": 0})
    drain_runs(store, config, dispatcher)
    forwarded, reply = history(ctx).messages[1:3]
    assert forwarded["role"] == "assistant"
    assert forwarded["content"] == "hello"
    assert forwarded["provenance"]["kind"] == "inter_session"
    assert forwarded["senderLabel"] == "Forwarded from main"
    assert forwarded["senderSession"] == {"sessionKey": "agent:main:main", "agentId": "main"}
    assert forwarded["idempotencyKey"] == forwarded["__openclaw"]["idempotencyKey"]
    assert forwarded["__openclaw"]["senderIsOwner"] is False
    assert reply["content"] == [{"type": "text", "text": "echo: hello"}]
    assert (reply["api"], reply["provider"], reply["model"], reply["stopReason"]) == (
        "echo",
        "echo",
        "echo",
        "stop",
    )
    assert reply["__openclaw"]["runId"] == forwarded["idempotencyKey"].removesuffix(":user")
    assert [m["__openclaw"]["seq"] for m in history(ctx).messages][:3] == [1, 2, 3]


def test_silent_replies_and_step_prompts_are_not_shown(ctx: ToolContext, store: Store) -> None:
    put(store, "user", "hi")
    put(store, "assistant", "REPLY_SKIP")
    put(store, "assistant", " ANNOUNCE_SKIP ")
    put(store, "assistant", "NO_REPLY")
    assert texts(history(ctx)) == ["hi"]


def test_an_unknown_session_is_an_error_result_in_the_releases_words(ctx: ToolContext) -> None:
    by_key = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": "agent:main:cron:nothing"})
    by_name = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": "nothing"})
    assert isinstance(by_key, ToolFailure)
    assert isinstance(by_name, ToolFailure)
    assert by_key.error == "No session found: agent:main:cron:nothing"
    assert by_name.error == "Session not found: nothing (use the full sessionKey from sessions_list)"


def test_a_main_session_with_no_message_yet_has_an_empty_history(ctx: ToolContext) -> None:
    result = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": "main"})
    assert isinstance(result, SessionsHistoryResult)
    assert result.wire() == {
        "sessionKey": "main",
        "messages": [],
        "truncated": False,
        "droppedMessages": False,
        "contentTruncated": False,
        "contentRedacted": False,
        "bytes": 24,
        "pendingInputs": {"items": [], "total": 0},
    }


def test_tool_call_arguments_are_redacted_and_cut_like_text(ctx: ToolContext, store: Store) -> None:
    call = ToolCallBlock(
        id="c1",
        name="deploy",
        arguments={"token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "notes": "n" * 5000},
    )
    put_message(store, Message.of("assistant", "", timestamp=1).model_copy(update={"content": [call]}))
    result = history(ctx, includeTools=True)
    arguments = result.messages[0]["content"][0]["arguments"]
    assert arguments["token"] == "ghp_ab…6789"
    assert arguments["notes"] == "n" * 4000 + "\n…(truncated)…"
    assert (result.content_redacted, result.content_truncated) == (True, True)


def test_a_newest_message_larger_than_the_whole_budget_leaves_the_placeholder(
    ctx: ToolContext, store: Store
) -> None:
    put(store, "user", "older")
    blocks = [TextBlock(text=f"{i:02d}" + "w" * 3990) for i in range(25)]  # 100 KB even when each is cut
    put_message(store, Message.of("assistant", "", timestamp=2).model_copy(update={"content": blocks}))
    result = history(ctx)
    assert result.messages == [
        {"role": "assistant", "content": "[sessions_history omitted: message too large]"}
    ]
    assert (result.truncated, result.dropped_messages) == (True, True)


def test_an_offset_pages_back_from_the_newest_message(ctx: ToolContext, store: Store) -> None:
    for i in range(5):
        put(store, "user", str(i))
    newest = history(ctx, limit=2, offset=0)
    assert texts(newest) == ["3", "4"]
    assert (newest.offset, newest.next_offset, newest.has_more, newest.total_messages) == (0, 2, True, 5)
    older = history(ctx, limit=2, offset=newest.next_offset)
    assert texts(older) == ["1", "2"]
    last = history(ctx, limit=2, offset=older.next_offset)
    assert (texts(last), last.has_more, last.next_offset) == (["0"], False, None)
    assert history(ctx, offset=99).messages == []
    assert "offset" not in history(ctx).wire()


def test_a_page_with_a_model_reply_says_its_content_was_cut_as_the_release_does(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    """The release drops each model reply's usage from a history and counts that as cutting it."""
    put(store, "user", "only a person")
    assert (history(ctx).content_truncated, history(ctx).truncated) == (False, False)
    TOOLS["sessions_send"].invoke(ctx, {"sessionKey": KEY, "message": "hello", "timeoutSeconds": 0})
    drain_runs(store, config, dispatcher)
    result = history(ctx)
    assert (result.content_truncated, result.truncated) == (True, True)
    assert all("usage" not in m for m in result.messages)
