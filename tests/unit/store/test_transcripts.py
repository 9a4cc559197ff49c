"""shared/store/transcripts.py: tails, newest last, with role filtering that pages backwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawbus.shared.base.clock import FixedClock
from clawbus.shared.ports.storage import ColdStoreUnavailable
from clawbus.shared.store import Store
from clawbus.shared.store.cold import ColdTranscripts
from clawbus.shared.wire.models import Message, Role
from tests.support.cold import blocked

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
    kept = store.transcripts.last(KEY, 4, keep=lambda m: m.role != "toolResult", page=3)
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


# -- hot and cold (docs/architecture.md, "Hot and cold transcripts") --


def texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


def filled(store: Store, count: int) -> list[str]:
    sent = [f"m{i}" for i in range(count)]
    for text in sent:
        append(store, "user" if int(text[1:]) % 2 == 0 else "assistant", text)
    return sent


def move(store: Store, keep: int) -> int:
    return store.transcripts.move(KEY, "main", "s1", keep)


def test_a_move_keeps_the_newest_in_redis_and_reads_back_one_transcript(store: Store) -> None:
    sent = filled(store, 30)
    assert move(store, 10) == 20
    assert store.transcripts.hot_length(KEY) == 10
    assert store.transcripts.length(KEY) == 30
    assert texts(store.transcripts.all(KEY)) == sent
    assert texts(store.transcripts.last(KEY, 15)) == sent[-15:]
    assert texts(store.transcripts.last(KEY, 5)) == sent[-5:]
    kept = store.transcripts.last(KEY, 12, keep=lambda m: m.role == "user", page=4)
    assert texts(kept) == [t for t in sent if int(t[1:]) % 2 == 0][-12:]


def test_moves_append_in_order_and_a_move_within_the_window_moves_nothing(store: Store) -> None:
    sent = filled(store, 12)
    assert move(store, 5) == 7
    assert move(store, 5) == 0
    sent += [f"m{i}" for i in range(12, 20)]
    for text in sent[12:]:
        append(store, "user", text)
    assert move(store, 5) == 8
    assert texts(store.transcripts.all(KEY)) == sent
    assert store.redis.hget(store.keys.cold(KEY), "count") == "15"


def test_a_move_that_crashed_before_its_file_was_written_is_done_by_the_next(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = filled(store, 20)
    cold = store.transcripts._cold

    def lost(*_args: object) -> None:
        raise OSError("the worker died here")

    monkeypatch.setattr(cold, "write", lost)
    with pytest.raises(OSError, match="died"):
        move(store, 5)
    assert store.redis.hexists(store.keys.cold(KEY), "moving")
    assert texts(store.transcripts.all(KEY)) == sent  # nothing lost meanwhile
    monkeypatch.undo()
    assert not store.redis.exists(store.keys.cold_lease(KEY))  # released, though the move failed
    move(store, 5)
    assert texts(store.transcripts.all(KEY)) == sent
    assert store.transcripts.hot_length(KEY) == 5
    assert not store.redis.hexists(store.keys.cold(KEY), "moving")


def test_a_move_that_crashed_after_its_file_was_written_is_read_once_then_trimmed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = filled(store, 20)
    transcripts = store.transcripts

    def lost(*_args: object) -> None:
        raise OSError("the worker died here")

    monkeypatch.setattr(transcripts, "_record", lost)
    with pytest.raises(OSError, match="died"):
        move(store, 5)
    monkeypatch.undo()
    # The file holds 15 lines and the stream still holds them too: read once, from the stream.
    assert len(transcripts._cold.read("main", "s1", 100)) == 15
    assert texts(transcripts.all(KEY)) == sent
    assert texts(transcripts.last(KEY, 18)) == sent[-18:]
    append(store, "user", "m20")
    move(store, 5)
    assert texts(transcripts.all(KEY)) == [*sent, "m20"]
    assert len(transcripts._cold.read("main", "s1", 100)) == 16


def test_a_move_between_a_readers_pages_neither_loses_nor_doubles(store: Store) -> None:
    """The reader paged the newest entries; a move trimmed some of them before it reached the end."""
    sent = filled(store, 30)
    real = store.redis.xrevrange
    calls = 0

    def paging(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        page = real(*args, **kwargs)  # type: ignore[arg-type]
        if calls == 1:
            move(store, 0)  # everything moves out after the first page was read
        return page

    store.redis.xrevrange = paging  # type: ignore[method-assign]
    assert texts(store.transcripts.last(KEY, 25, page=10, keep=lambda _message: True)) == sent[-25:]


def test_a_second_move_of_a_session_while_one_runs_moves_nothing(store: Store) -> None:
    filled(store, 20)
    store.redis.set(store.keys.cold_lease(KEY), "another worker")
    assert move(store, 5) == 0
    assert store.transcripts.hot_length(KEY) == 20


def test_a_session_moved_out_whole_still_shows_its_tail(store: Store) -> None:
    sent = filled(store, 6)
    move(store, 0)
    assert store.transcripts.hot_length(KEY) == 0
    assert [texts(tail) for tail in store.transcripts.tails([KEY, "agent:main:other"], 3)] == [sent[-3:], []]


def test_dropping_the_cold_part_deletes_its_file(store: Store) -> None:
    filled(store, 6)
    move(store, 2)
    store.transcripts.drop_cold(KEY)
    assert store.transcripts._cold.read("main", "s1", 10) == []


def test_first_reads_the_oldest_messages_from_the_cold_part_too(store: Store) -> None:
    sent = [f"m{i}" for i in range(30)]
    for text in sent:
        append(store, "user", text)
    assert texts(store.transcripts.first(KEY, 3)) == sent[:3]
    store.transcripts.move(KEY, "main", "sid", keep=10)
    assert texts(store.transcripts.first(KEY, 3)) == sent[:3]
    assert texts(store.transcripts.first(KEY, 25)) == sent[:25]


# -- a cold store that refuses (docs/architecture.md, "When the cold store refuses") --


def test_a_refused_move_keeps_every_message_hot_counts_and_backs_off_until_one_succeeds(
    store: Store, clock: FixedClock, tmp_path: Path
) -> None:
    blocker = blocked(tmp_path / "cold" / "store")
    store.transcripts._cold = ColdTranscripts(str(tmp_path / "cold" / "store"))
    sent = filled(store, 20)
    first = clock.now_ms()
    with pytest.raises(ColdStoreUnavailable) as refused:
        move(store, 5)
    assert isinstance(refused.value.__cause__, OSError)
    assert store.transcripts.hot_length(KEY) == 20  # nothing trimmed: the window grows instead
    assert texts(store.transcripts.all(KEY)) == sent
    figures = store.fleet.figures([])
    assert figures.cold_moves_failed == 1
    assert figures.cold_move_failure is not None
    assert (figures.cold_move_failure.at, figures.cold_move_failure.since) == (first, first)
    assert "cannot write" in figures.cold_move_failure.error

    sent += [f"m{i}" for i in range(20, 30)]
    for text in sent[20:]:
        append(store, "user", text)
    clock.advance(3)  # within the first wait (5 s, give or take a fifth): not tried
    assert move(store, 5) == 0
    assert store.fleet.figures([]).cold_moves_failed == 1
    clock.advance(4)  # past it: tried, refused again (the crashed move's read first), put off longer
    with pytest.raises(ColdStoreUnavailable, match="cannot read"):
        move(store, 5)
    retry = store.redis.hgetall(store.keys.cold_retry(KEY))
    assert retry["failures"] == "2"
    assert 8_000 <= int(retry["retryAt"]) - clock.now_ms() <= 12_000
    figures = store.fleet.figures([])
    assert figures.cold_moves_failed == 2
    assert figures.cold_move_failure is not None
    assert (figures.cold_move_failure.at, figures.cold_move_failure.since) == (clock.now_ms(), first)
    assert store.transcripts.hot_length(KEY) == 30

    blocker.unlink()  # the store is writable again
    clock.advance(13)
    assert move(store, 5) == 10  # the first move, finished from its intent, then what piled up since
    assert store.transcripts.hot_length(KEY) == 5
    assert store.redis.hget(store.keys.cold(KEY), "count") == "25"
    assert texts(store.transcripts.all(KEY)) == sent
    assert not store.redis.exists(store.keys.cold_retry(KEY))
    figures = store.fleet.figures([])
    assert (figures.cold_moves_failed, figures.cold_move_failure) == (2, None)  # a counter only grows
