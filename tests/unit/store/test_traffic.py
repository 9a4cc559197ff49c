"""shared/store/traffic.py and its scripts: admission within a model's limits, classes, fair shares,
cooldowns, settling."""

from __future__ import annotations

from clawbus.shared.domain.traffic import CallLimits
from clawbus.shared.store import Store

MODEL = "fake/m"


def _admit(
    store: Store, waiter: str, *, limits: CallLimits, klass: int = 0, flow: str = "a", tokens: int = 10
):
    """``waiter``'s run (running, as a run waiting for its model is) asks for admission."""
    store.redis.hset(store.keys.run(waiter), "status", "running")
    return store.traffic.admit(
        MODEL,
        waiter,
        klass=klass,
        flow=flow,
        weight=1,
        limits=limits,
        tokens=tokens,
        hold_ms=60_000,
        grace_ms=5_000,
    )


def test_calls_start_at_the_limits_pace_a_seconds_worth_at_once(store: Store) -> None:
    limits = CallLimits(requests_per_minute=120)  # one each 500 ms, two at once
    assert _admit(store, "r1", limits=limits).ticket is not None
    assert _admit(store, "r2", limits=limits).ticket is not None
    paced = _admit(store, "r3", limits=limits)
    assert (paced.ticket, paced.reason) == (None, "requests")
    assert 0 < paced.wait_ms <= 500


def test_the_window_caps_any_minute_whatever_the_pace(store: Store) -> None:
    """Calls other workers started 30 s ago fill the minute: the next waits for the first of them to leave."""
    window, tokens, *_ = store.keys.traffic(MODEL)
    now_ms = int(store.redis.time()[0]) * 1000
    for i in range(3):
        store.redis.zadd(window, {f"earlier#{i}": now_ms - 30_000 + i})
        store.redis.hset(tokens, f"earlier#{i}", 1)
    refused = _admit(store, "r1", limits=CallLimits(requests_per_minute=3))
    assert (refused.ticket, refused.reason) == (None, "requests")
    assert 25_000 < refused.wait_ms <= 31_000


def test_concurrent_limit_counts_calls_in_flight_until_they_settle(store: Store) -> None:
    limits = CallLimits(concurrent=1)
    first = _admit(store, "r1", limits=limits)
    assert first.ticket is not None
    waiting = _admit(store, "r2", limits=limits)
    assert (waiting.ticket, waiting.reason) == (None, "concurrent")
    store.traffic.settle(MODEL, first.ticket, tokens_used=5)
    assert _admit(store, "r2", limits=limits).ticket is not None


def test_tokens_are_paced_by_reservation_and_given_back_to_what_was_used(store: Store) -> None:
    limits = CallLimits(tokens_per_minute=6_000)  # 10 ms a token, a second's worth (100) at once
    first = _admit(store, "r1", limits=limits, tokens=80)
    assert first.ticket is not None
    assert _admit(store, "r2", limits=limits, tokens=50).ticket is not None
    assert _admit(store, "r3", limits=limits, tokens=50).reason == "tokens"
    store.traffic.settle(MODEL, first.ticket, tokens_used=30, limits=limits)
    assert _admit(store, "r3", limits=limits, tokens=50).ticket is not None
    [figures] = store.traffic.snapshot([MODEL])
    assert figures.tokens_in_window == 130


def test_the_token_window_caps_any_minute(store: Store) -> None:
    limits = CallLimits(tokens_per_minute=100)
    first = _admit(store, "r1", limits=limits, tokens=80)
    assert first.ticket is not None
    assert _admit(store, "r2", limits=limits, tokens=50).reason == "tokens"


def test_people_are_admitted_before_background_work_that_waited_longer(store: Store) -> None:
    limits = CallLimits(concurrent=1)
    holder = _admit(store, "busy", limits=limits, klass=2)
    assert holder.ticket is not None
    assert _admit(store, "leaf", limits=limits, klass=2).ticket is None
    chat = _admit(store, "chat", limits=limits, klass=0)
    assert chat.position == 0
    store.traffic.settle(MODEL, holder.ticket, tokens_used=1)
    assert _admit(store, "leaf", limits=limits, klass=2).ticket is None
    assert _admit(store, "chat", limits=limits, klass=0).ticket is not None


def test_flows_of_one_class_take_turns(store: Store) -> None:
    limits = CallLimits(concurrent=1)
    holder = _admit(store, "hold", limits=limits, flow="x")
    assert holder.ticket is not None
    for i in range(5):
        _admit(store, f"fan{i}", limits=limits, flow="fanout")
    lone = _admit(store, "lone", limits=limits, flow="other")
    assert lone.position == 1  # behind the fan-out's first call only


def test_a_rate_limited_call_sets_a_cooldown_every_caller_obeys(store: Store) -> None:
    limits = CallLimits()
    first = _admit(store, "r1", limits=limits)
    assert first.ticket is not None
    store.traffic.settle(MODEL, first.ticket, tokens_used=0, cooldown_ms=2_000, rate_limited=True)
    held = _admit(store, "r2", limits=limits)
    assert held.reason == "cooldown"
    assert 0 < held.wait_ms <= 2_000
    [figures] = store.traffic.snapshot([MODEL])
    assert (figures.rate_limited, figures.cooldowns) == (1, 1)


def test_learned_limits_apply_when_none_are_configured(store: Store) -> None:
    first = _admit(store, "r1", limits=CallLimits())
    assert first.ticket is not None
    store.traffic.settle(MODEL, first.ticket, tokens_used=1, learned=CallLimits(requests_per_minute=1))
    assert _admit(store, "r2", limits=CallLimits()).reason == "requests"


def test_a_waiter_that_leaves_frees_its_place(store: Store) -> None:
    limits = CallLimits(concurrent=1)
    assert _admit(store, "hold", limits=limits).ticket is not None
    _admit(store, "gone", limits=limits)
    assert _admit(store, "next", limits=limits).position == 1
    store.traffic.leave(MODEL, "gone")
    assert _admit(store, "next", limits=limits).position == 0
    assert store.traffic.models() == [MODEL]


def test_a_waiter_whose_run_ended_while_parked_does_not_hold_its_place(store: Store) -> None:
    limits = CallLimits(concurrent=1)
    assert _admit(store, "hold", limits=limits).ticket is not None
    _admit(store, "cancelled", limits=limits)
    assert _admit(store, "next", limits=limits).position == 1
    store.redis.hset(store.keys.run("cancelled"), "status", "aborted")
    assert _admit(store, "next", limits=limits).position == 0


def test_a_call_nobody_waits_before_starts_at_once_and_is_counted_as_any_other(store: Store) -> None:
    """A model with no limits and an empty queue takes the short way in; its figures are the same."""
    first = _admit(store, "r1", limits=CallLimits(), tokens=7)
    second = _admit(store, "r2", limits=CallLimits(), klass=2, tokens=5)
    assert first.ticket is not None
    assert second.ticket is not None
    figures = store.traffic.snapshot([MODEL])[0]
    assert (figures.in_flight, figures.requests_in_window, figures.tokens_in_window) == (2, 2, 12)
    assert figures.admitted == {"people": 1, "agents": 0, "background": 1}
    assert figures.wait_buckets["people"] == {"10": 1}
    assert figures.waited_ms == {"people": 0, "agents": 0, "background": 0}
    assert store.redis.zcard(store.keys.traffic(MODEL)[4]) == 0  # nobody left queued
