"""shared/store/transcripts.py: tails, newest last, with role filtering that pages backwards."""

from __future__ import annotations

from shared.models import Message, Role
from shared.store import Store

KEY = "agent:main:main"


def append(store: Store, role: Role, text: str) -> None:
    message = Message.of(role, text, timestamp=1)
    store.redis.xadd(store.keys.transcript(KEY), {"m": message.model_dump_json(by_alias=True)})


def test_last_returns_the_tail_oldest_first(store: Store) -> None:
    for i in range(5):
        append(store, "user", str(i))
    assert [m.text for m in store.transcripts.last(KEY, 3)] == ["2", "3", "4"]


def test_last_with_a_filter_counts_only_kept_messages_across_pages(store: Store) -> None:
    for i in range(10):
        append(store, "user", f"u{i}")
        append(store, "toolResult", f"t{i}")
    kept = store.transcripts.last(KEY, 4, keep_role=lambda role: role != "toolResult", page=3)
    assert [m.text for m in kept] == ["u6", "u7", "u8", "u9"]


def test_last_of_an_empty_transcript_is_empty(store: Store) -> None:
    assert store.transcripts.last(KEY, 5) == []
    assert store.transcripts.length(KEY) == 0


def test_tails_reads_several_sessions_in_one_round_trip(store: Store) -> None:
    append(store, "user", "a")
    assert [[m.text for m in tail] for tail in store.transcripts.tails([KEY, "agent:main:cron:x"], 5)] == [
        ["a"],
        [],
    ]
