"""shared/store/model_calls.py: a model call's admission and budget reservation in one round trip, and its
settling in the traffic and the budgets in one; a run's memo beside either."""

from __future__ import annotations

from clawbus.shared.domain.budgets import Charge, Limits, Refusal, Reservation, Spend
from clawbus.shared.domain.runs import Memo
from clawbus.shared.domain.traffic import Ask, CallClose, CallEnd, CallLimits
from clawbus.shared.store import Store
from clawbus.shared.wire.models import RunStatus
from tests.support.runs import a_run

MODEL = "fake/m"
DAY = "2026-11-27"
NOW = 1_700_000_000_000


def ask(store: Store, waiter: str, limits: CallLimits = CallLimits()) -> Ask:
    """``waiter``'s run (running, as a run waiting for its model is) asks for a call of 10 tokens."""
    store.redis.hset(store.keys.run(waiter), "status", "running")
    return Ask(MODEL, waiter, 0, "a", 1, limits, tokens=10, hold_ms=60_000, grace_ms=5_000)


def reservation(usd: int, limits: Limits = Limits()) -> Reservation:
    return Reservation("main", DAY, None, limits, usd_micros=usd, tokens=10, now_ms=NOW, hold_ms=60_000)


def close(ticket: str) -> CallClose:
    """The call used 30 tokens (20 in, 10 out) and spent 120 micro-USD."""
    return CallClose(
        MODEL, ticket, CallEnd(30, tokens_in=20, tokens_out=10), Charge("main", DAY, None, 120, 30)
    )


def in_flight(store: Store) -> int:
    return store.traffic.snapshot([MODEL])[0].in_flight


def test_an_admitted_call_is_held_in_flight_and_against_its_budget(store: Store) -> None:
    admitted, refused = store.calls.open(ask(store, "r1"), reservation(500))
    assert admitted.ticket is not None
    assert admitted.ticket.startswith("r1#")
    assert refused is None
    assert in_flight(store) == 1
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(500, 10)


def test_a_call_told_to_wait_reserves_nothing(store: Store) -> None:
    limits = CallLimits(concurrent=1)
    first, _ = store.calls.open(ask(store, "r1", limits), reservation(500))
    waiting, refused = store.calls.open(ask(store, "r2", limits), reservation(500))
    assert first.ticket is not None
    assert (waiting.ticket, waiting.reason, refused) == (None, "concurrent", None)
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(500, 10)


def test_an_admitted_call_a_budget_refuses_says_which_and_holds_nothing_more(store: Store) -> None:
    limits = Limits(daily_usd=0.001)
    store.calls.open(ask(store, "r1"), reservation(600, limits))
    admitted, refused = store.calls.open(ask(store, "r2"), reservation(600, limits))
    assert admitted.ticket is not None
    assert refused == Refusal("dailyUsd", 0.0006, 0.001)
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(600, 10)


def test_closing_a_call_frees_its_place_and_charges_what_it_spent(store: Store) -> None:
    admitted, _ = store.calls.open(ask(store, "r1"), reservation(500))
    assert admitted.ticket is not None
    store.calls.close(close(admitted.ticket))
    traffic = store.traffic.snapshot([MODEL])[0]
    assert (traffic.in_flight, traffic.tokens_in_window, traffic.tokens_in, traffic.tokens_out) == (
        0,
        30,
        20,
        10,
    )
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(120, 30)


def test_a_call_closed_with_its_runs_memo_writes_both_while_the_lease_holds(store: Store) -> None:
    run = a_run("r1", RunStatus.RUNNING)
    store.redis.hset(store.keys.lease(run.session_key), "token", "held")
    first, _ = store.calls.open(ask(store, "r1"), reservation(500))
    second, _ = store.calls.open(ask(store, "r1"), reservation(500))
    assert first.ticket is not None
    assert second.ticket is not None
    assert store.calls.close_and_memoize(close(first.ticket), Memo(run, "held", '{"steps": 1}'))
    assert store.redis.hget(store.keys.run("r1"), "memo") == '{"steps": 1}'
    # A lost lease: the memo is refused, the call is closed all the same.
    assert not store.calls.close_and_memoize(close(second.ticket), Memo(run, "stale", '{"steps": 2}'))
    assert store.redis.hget(store.keys.run("r1"), "memo") == '{"steps": 1}'
    assert in_flight(store) == 0
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(240, 60)


def test_a_memo_goes_with_the_last_calls_settling_and_the_next_calls_admission(store: Store) -> None:
    run = a_run("r1", RunStatus.RUNNING)
    store.redis.hset(store.keys.lease(run.session_key), "token", "held")
    first, _ = store.calls.open(ask(store, "r1"), reservation(500))
    assert first.ticket is not None
    kept, second, refused = store.calls.memoize_and_open(
        Memo(run, "held", '{"steps": 1}'), close(first.ticket), ask(store, "r1"), reservation(500)
    )
    assert kept
    assert second.ticket is not None
    assert second.ticket != first.ticket
    assert refused is None
    assert store.redis.hget(store.keys.run("r1"), "memo") == '{"steps": 1}'
    assert in_flight(store) == 1  # the first call closed, the second in flight
    assert store.budgets.spent(["main"], DAY)["main"] == Spend(120 + 500, 30 + 10)


def test_a_memo_refused_for_a_lost_lease_still_answers_the_admission(store: Store) -> None:
    run = a_run("r1", RunStatus.RUNNING)
    store.redis.hset(store.keys.lease(run.session_key), "token", "held")
    kept, admitted, _ = store.calls.memoize_and_open(
        Memo(run, "stale", '{"steps": 1}'), None, ask(store, "r1"), reservation(500)
    )
    assert not kept
    assert admitted.ticket is not None  # the caller closes it unsent
    assert store.redis.hget(store.keys.run("r1"), "memo") is None
