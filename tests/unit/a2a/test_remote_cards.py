"""shared/adapters/runtimes/remote_cards.py: a remote's agent card kept for its time to live, then asked for
again; a card forgotten when its remote could not be reached."""

from __future__ import annotations

from a2a.types import AgentCard

from clawbus.shared.adapters.runtimes.remote_cards import RemoteCards

URL = "https://far.example"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_card_is_kept_for_its_time_to_live_and_then_asked_for_again() -> None:
    clock = Clock()
    cards = RemoteCards(ttl_s=300, clock=clock)
    card = AgentCard(name="far")
    assert cards.get(URL) is None
    cards.put(URL, card)
    clock.now += 300
    assert cards.get(URL) == card
    clock.now += 1
    assert cards.get(URL) is None


def test_a_forgotten_card_is_asked_for_again_and_other_remotes_keep_theirs() -> None:
    cards = RemoteCards(clock=Clock())
    cards.put(URL, AgentCard(name="far"))
    cards.put("https://near.example", AgentCard(name="near"))
    cards.forget(URL)
    assert cards.get(URL) is None
    assert cards.get("https://near.example") == AgentCard(name="near")
