"""shared/commands/queue.py: `/queue` read and answered as the release's directive, its settings stored on
the session, and shared/flows/queueing.py holding the session's messages to them."""

from __future__ import annotations

import pytest

from clawbus.shared.wire.models import SessionEntry, ToolFailure
from clawbus.workers.testing import World, world
from tests.support.commands import KEY, Chat

OPTIONS = (
    "Options: modes steer, followup, collect, interrupt, reject; debounce:<ms|s|m>, cap:<n>, "
    "drop:old|new|summarize."
)


@pytest.fixture
def chat() -> Chat:
    return Chat(world({"messages": {"queue": {"debounceMs": 500}}}))


def entry(chat: Chat) -> SessionEntry:
    found = chat.world.store.sessions.get(KEY)
    assert found is not None
    return found


def busy(chat: Chat) -> str:
    """A run in the session's lane (not yet run): the session is busy for every message after."""
    return chat.message("first", queueMode="followup").run_id


def test_queue_alone_shows_the_settings_in_force_and_the_options(chat: Chat) -> None:
    assert chat.text("/queue") == (
        f"Current queue settings: mode=steer, debounce=500ms, cap=20, drop=summarize.\n{OPTIONS}"
    )


def test_a_mode_and_options_are_stored_and_acknowledged_one_by_one(chat: Chat) -> None:
    said = chat.text("/queue collect debounce:2s cap:5 drop:summarize")
    assert said == (
        "⚙️ Queue mode set to collect. ⚙️ Queue debounce set to 2000ms. ⚙️ Queue cap set to 5. "
        "⚙️ Queue drop set to summarize."
    )
    stored = entry(chat)
    assert (stored.queue_mode, stored.queue_debounce_ms, stored.queue_cap, stored.queue_drop) == (
        "collect",
        2000,
        5,
        "summarize",
    )
    assert chat.text("/queue").startswith(
        "Current queue settings: mode=collect, debounce=2000ms, cap=5, drop=summarize."
    )


@pytest.mark.parametrize(
    ("command", "mode"),
    [
        ("/QUEUE Steering", "steer"),
        ("/queue: coalesce", "collect"),
        ("/queue abort", "interrupt"),
        ("/queue follow-ups", "followup"),
        ("/queue interrupts", "interrupt"),
        ("/queue reject", "reject"),
    ],
)
def test_modes_are_read_with_the_releases_aliases_in_any_case(chat: Chat, command: str, mode: str) -> None:
    assert chat.text(command) == f"⚙️ Queue mode set to {mode}."
    assert entry(chat).queue_mode == mode


@pytest.mark.parametrize(
    ("option", "ack"),
    [
        ("debounce:1500", "⚙️ Queue debounce set to 1500ms."),
        ("debounce=1m", "⚙️ Queue debounce set to 60000ms."),
        ("DEBOUNCE:0.5s", "⚙️ Queue debounce set to 500ms."),
        ("cap=3", "⚙️ Queue cap set to 3."),
        ("drop:newest", "⚙️ Queue drop set to new."),
        ("drop:summary", "⚙️ Queue drop set to summarize."),
    ],
)
def test_an_option_alone_leaves_the_mode_as_it_was(chat: Chat, option: str, ack: str) -> None:
    chat.text("/queue steer")
    assert chat.text(f"/queue {option}") == ack
    assert entry(chat).queue_mode == "steer"


@pytest.mark.parametrize("word", ["default", "reset", "CLEAR"])
def test_default_clears_the_mode_and_every_option(chat: Chat, word: str) -> None:
    chat.text("/queue collect debounce:2s cap:5 drop:new")
    assert chat.text(f"/queue {word}") == "⚙️ Queue mode reset to default."
    stored = entry(chat)
    assert (stored.queue_mode, stored.queue_debounce_ms, stored.queue_cap, stored.queue_drop) == (None,) * 4


def test_an_unknown_mode_is_named_and_nothing_changes(chat: Chat) -> None:
    answer = chat.command("/queue sometimes")
    assert (answer.status, answer.error) == (
        "error",
        'Unrecognized queue mode "sometimes". Valid modes: steer, followup, collect, interrupt, reject.',
    )
    assert chat.world.store.sessions.get(KEY) is None


def test_every_option_not_valid_is_named_at_once(chat: Chat) -> None:
    assert chat.text("/queue followup debounce:abc cap:0 drop:x") == (
        'Invalid debounce "abc". Use ms/s/m (e.g. debounce:1500ms, debounce:2s). '
        'Invalid cap "0". Use a positive integer (e.g. cap:10). '
        'Invalid drop policy "x". Use drop:old, drop:new, or drop:summarize.'
    )
    assert chat.world.store.sessions.get(KEY) is None


@pytest.mark.parametrize("debounce", ["0", "11m", "-5", "1h30"])
def test_a_debounce_of_no_window_or_longer_than_ten_minutes_is_refused(chat: Chat, debounce: str) -> None:
    assert chat.text(f"/queue debounce:{debounce}").startswith(f'Invalid debounce "{debounce}".')


def test_a_directive_followed_by_text_applies_to_that_message_only(chat: Chat) -> None:
    first = busy(chat)
    refused = chat.say("/queue reject are you there?")
    assert (refused.status, refused.run_id) == ("busy", first)
    assert entry(chat).queue_mode is None  # nothing stored
    queued = chat.message("/queue followup then do this")
    lane = chat.world.store.runs.inputs(chat.world.store.runs.lane(KEY))
    assert [m.text if m else "" for m in lane] == ["first", "then do this"]
    assert queued.status == "accepted"


def test_a_reset_followed_by_text_sends_the_text_with_the_sessions_own_mode(chat: Chat) -> None:
    busy(chat)
    chat.text("/queue reject")
    assert chat.say("/queue default hello").status == "busy"
    assert entry(chat).queue_mode == "reject"


# --- the session's options, honoured -----------------------------------------------------------------


def test_the_sessions_cap_and_drop_go_over_the_configurations(chat: Chat) -> None:
    busy(chat)
    chat.text("/queue cap:1 drop:new")
    assert chat.message("b").status == "accepted"
    refused = chat.say("c")
    assert isinstance(refused, ToolFailure)
    assert refused.error == f"dropped: {KEY} has 1 messages queued, the most it may (/queue cap:1, drop=new)"


def test_a_messages_own_options_go_over_the_sessions(chat: Chat) -> None:
    busy(chat)
    chat.text("/queue cap:1 drop:new")
    chat.message("b")
    assert chat.message("/queue followup cap:5 c").status == "accepted"


def test_the_sessions_debounce_is_its_collect_window(chat: Chat) -> None:
    w: World = chat.world
    chat.text("/queue collect debounce:3s")
    a = chat.message("a")
    w.clock.advance(2)  # past the configuration's 500 ms window, inside the session's 3 s
    assert chat.message("b").run_id == a.run_id
    w.clock.advance(2)  # past the session's window too: a collect run of its own
    assert chat.message("c").run_id != a.run_id
    lane = w.store.runs.inputs(w.store.runs.lane(KEY))
    assert [m.text if m else "" for m in lane] == ["a\nb", "c"]
