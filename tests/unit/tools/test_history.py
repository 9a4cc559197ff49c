"""shared/tools/history.py: docs/contract.md §3 limits, tool filtering, budget and redaction."""

from __future__ import annotations

from shared.config import Config
from shared.models import Message, Role, TextBlock, ToolCallBlock, ToolFailure
from shared.sessions import new_entry
from shared.store import Store
from shared.tools.context import ToolContext
from shared.tools.history_schema import SessionsHistoryResult
from shared.tools.registry import TOOLS
from tests.conftest import make_config
from workers.testing import InlineDispatcher, drain_runs

KEY = "agent:main:cron:job"


def put(store: Store, role: Role, text: str) -> None:
    put_message(store, Message.of(role, text, timestamp=1))


def put_message(store: Store, message: Message) -> None:
    if not store.sessions.exists(KEY):
        store.sessions.create(new_entry(make_config(), KEY, 1))
    store.redis.xadd(store.keys.transcript(KEY), {"m": message.model_dump_json(by_alias=True)})


def history(ctx: ToolContext, **args: object) -> SessionsHistoryResult:
    result = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": KEY, **args})
    assert isinstance(result, SessionsHistoryResult)
    return result


def texts(result: SessionsHistoryResult) -> list[str]:
    return [m["content"][0]["text"] for m in result.messages]


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
    assert texts(history(ctx, limit=0)) == ["4"]
    assert len(history(ctx, limit=5000).messages) == 5


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


def test_provenance_is_kept_in_the_raw_shape(
    ctx: ToolContext, store: Store, config: Config, dispatcher: InlineDispatcher
) -> None:
    TOOLS["sessions_send"].invoke(ctx, {"sessionKey": KEY, "message": "hello", "timeoutSeconds": 0})
    drain_runs(store, config, dispatcher)
    first = history(ctx).messages[0]
    assert first["provenance"]["kind"] == "inter_session"
    assert first["role"] == "user"
    assert "timestamp" in first
    assert "runId" in first


def test_an_unknown_session_is_an_error_result(ctx: ToolContext) -> None:
    result = TOOLS["sessions_history"].invoke(ctx, {"sessionKey": "agent:main:cron:nothing"})
    assert isinstance(result, ToolFailure)
    assert (
        result.error
        == "Session not found: agent:main:cron:nothing (use the full sessionKey from sessions_list)"
    )


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
