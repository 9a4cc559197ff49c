"""shared/tools/history.py: docs/contract.md §3 limits, tool filtering, budget and redaction."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clawbus.shared.domain.sessions import new_entry
from clawbus.shared.store import Store
from clawbus.shared.tools.registry import TOOLS
from clawbus.shared.tools.tool_context import ToolContext
from clawbus.shared.wire.history_schema import SessionsHistoryResult
from clawbus.shared.wire.models import Message, Role, TextBlock, ToolCallBlock, ToolFailure
from clawbus.workers.testing import World
from tests.conftest import make_config
from tests.support.runs import accept, claim

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
    ctx: ToolContext, store: Store, inline: World
) -> None:
    put(store, "user", "first")
    TOOLS["sessions_send"].invoke(ctx, {"sessionKey": KEY, "message": "hello", "timeoutSeconds": 0})
    inline.drain_runs()
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
    ctx: ToolContext, store: Store, inline: World
) -> None:
    """The release drops each model reply's usage from a history and counts that as cutting it."""
    put(store, "user", "only a person")
    assert (history(ctx).content_truncated, history(ctx).truncated) == (False, False)
    TOOLS["sessions_send"].invoke(ctx, {"sessionKey": KEY, "message": "hello", "timeoutSeconds": 0})
    inline.drain_runs()
    result = history(ctx)
    assert (result.content_truncated, result.truncated) == (True, True)
    assert all("usage" not in m for m in result.messages)


# --- a window around one message (messageId, sessionId) ----------------------------------------------------


def numbered(store: Store, count: int) -> list[Message]:
    """``count`` user messages ``0``, ``1``, ... with a tool result after each, oldest first."""
    messages: list[Message] = []
    for i in range(count):
        message = Message.of("user", str(i), timestamp=1)
        put_message(store, message)
        put(store, "toolResult", f"t{i}")
        messages.append(message)
    return messages


def test_a_message_id_reads_the_window_around_that_message(ctx: ToolContext, store: Store) -> None:
    ids = [m.id for m in numbered(store, 10)]
    # Five shown: two older than it, two newer (tool results are not shown, so not counted).
    around = history(ctx, messageId=ids[5], limit=5)
    assert texts(around) == ["3", "4", "5", "6", "7"]
    assert [m["__openclaw"]["id"] for m in around.messages][2] == ids[5]
    # An even window keeps one more older message than newer, as the release's.
    assert texts(history(ctx, messageId=ids[5], limit=4)) == ["4", "5", "6", "7"]
    # Near either end the window keeps its length from the other side.
    assert texts(history(ctx, messageId=ids[0], limit=3)) == ["0", "1", "2"]
    assert texts(history(ctx, messageId=ids[9], limit=3)) == ["7", "8", "9"]


def test_a_message_id_window_ignores_the_offset_and_gives_no_page_fields(
    ctx: ToolContext, store: Store
) -> None:
    ids = [m.id for m in numbered(store, 6)]
    around = history(ctx, messageId=ids[1], limit=3, offset=2)
    assert texts(around) == ["0", "1", "2"]
    assert {"offset", "nextOffset", "hasMore", "totalMessages"}.isdisjoint(around.wire())


def test_a_message_id_counts_tool_messages_when_they_are_shown(ctx: ToolContext, store: Store) -> None:
    ids = [m.id for m in numbered(store, 4)]
    assert texts(history(ctx, messageId=ids[2], limit=3, includeTools=True)) == ["t1", "2", "t2"]


def test_a_message_id_not_in_the_transcript_is_an_empty_history(ctx: ToolContext, store: Store) -> None:
    numbered(store, 3)
    assert history(ctx, messageId="no-such-message").messages == []


def test_a_message_id_finds_a_message_moved_to_the_cold_transcript(ctx: ToolContext, store: Store) -> None:
    ids = [m.id for m in numbered(store, 6)]
    assert store.transcripts.move(KEY, "main", "s1", keep=2) == 10
    assert texts(history(ctx, messageId=ids[1], limit=3)) == ["0", "1", "2"]
    assert texts(history(ctx, messageId=ids[4], limit=3)) == ["3", "4", "5"]


def test_the_window_keeps_the_message_asked_for_within_the_byte_budget(
    ctx: ToolContext, store: Store
) -> None:
    # Forty messages of about 4 KB: half of them fit in 80 KiB. Dropping the oldest would drop the one asked
    # for; the window grows around it instead.
    messages = [Message.of("user", f"{i} " + "x" * 3900, timestamp=1) for i in range(40)]
    for message in messages:
        put_message(store, message)
    around = history(ctx, messageId=messages[2].id, limit=40)
    shown_ids = [m["__openclaw"]["id"] for m in around.messages]
    assert shown_ids[:3] == [m.id for m in messages[:3]]
    assert around.dropped_messages
    assert around.bytes <= 80 * 1024


def test_a_session_id_must_be_the_sessions_own(ctx: ToolContext, store: Store) -> None:
    ids = [m.id for m in numbered(store, 3)]
    entry = store.sessions.get(KEY)
    assert entry is not None
    assert texts(history(ctx, messageId=ids[1], sessionId=entry.session_id.upper(), limit=1)) == ["1"]
    other = TOOLS["sessions_history"].invoke(
        ctx, {"sessionKey": KEY, "messageId": ids[1], "sessionId": "7f1c7c1e-0000-4000-8000-000000000000"}
    )
    assert isinstance(other, ToolFailure)
    assert other.wire() == {"status": "error", "error": "sessionId does not belong to sessionKey"}


def test_a_session_id_without_a_message_id_is_refused_in_the_releases_words(ctx: ToolContext) -> None:
    with pytest.raises(ValidationError, match="sessionId requires messageId"):
        TOOLS["sessions_history"].invoke(ctx, {"sessionKey": KEY, "sessionId": "abc"})


# --- pending inputs, a page at a time (pendingBefore) -----------------------------------------------------


def queued_behind_a_running_run(store: Store, count: int) -> list[str]:
    """``count`` messages queued behind a run of KEY a worker has started: their texts, oldest first."""
    running = accept(store, make_config(), "running", key=KEY).run_id
    claim(store, running, key=KEY)
    texts = [f"waiting {i}" for i in range(count)]
    for text in texts:
        accept(store, make_config(), text, key=KEY)
    return texts


def pending_texts(result: SessionsHistoryResult) -> list[str]:
    return [item["message"]["content"] for item in result.pending_inputs.items]


def test_pending_inputs_come_twenty_at_a_time_newest_first_and_page_back_with_pending_before(
    ctx: ToolContext, store: Store
) -> None:
    waiting = queued_behind_a_running_run(store, 25)
    first = history(ctx)
    assert pending_texts(first) == waiting[5:]
    assert first.pending_inputs.total == 25
    assert first.pending_inputs.next_before is not None
    older = history(ctx, pendingBefore=first.pending_inputs.next_before)
    assert pending_texts(older) == waiting[:5]
    assert older.pending_inputs.total == 25
    assert older.pending_inputs.next_before is None
    assert "nextBefore" not in older.wire()["pendingInputs"]


def test_the_limit_bounds_the_page_of_pending_inputs_too(ctx: ToolContext, store: Store) -> None:
    waiting = queued_behind_a_running_run(store, 3)
    page = history(ctx, limit=2)
    assert pending_texts(page) == waiting[1:]
    assert page.pending_inputs.next_before is not None
    assert pending_texts(history(ctx, limit=2, pendingBefore=page.pending_inputs.next_before)) == waiting[:1]


def test_pending_before_older_than_every_input_is_an_empty_page_with_the_total(
    ctx: ToolContext, store: Store
) -> None:
    queued_behind_a_running_run(store, 2)
    page = history(ctx, pendingBefore=1)
    assert (page.pending_inputs.items, page.pending_inputs.total, page.pending_inputs.next_before) == (
        [],
        2,
        None,
    )


@pytest.mark.parametrize("value", [0, -1, "x"])
def test_a_pending_before_that_is_no_positive_integer_is_refused_in_the_releases_words(
    ctx: ToolContext, value: object
) -> None:
    with pytest.raises(ValidationError, match="pendingBefore must be a positive integer"):
        history(ctx, pendingBefore=value)
