"""A model call's way through the gate in Redis, one round trip each way: its admission and its budget
reservation sent together, then its settling in the traffic and the budgets together, and with the run's
memo when the step called tools, or with the run's commit after its last step; after a step whose calls
only read, the settling and the memo go with the next call's admission (docs/capacity.md, figure 6: the
gate was four round trips a step and the memo a fifth)."""

from __future__ import annotations

import random
from typing import Any

from redis import Redis

from clawbus.shared.domain.budgets import Refusal, Reservation
from clawbus.shared.domain.runs import Committed, Ending, Memo
from clawbus.shared.domain.traffic import Admission, Ask, CallClose
from clawbus.shared.store.budgets import BudgetStore, refusal
from clawbus.shared.store.runs import RunStore
from clawbus.shared.store.scripts import ScriptCall, run_pipelined
from clawbus.shared.store.traffic import TrafficStore, admission
from clawbus.shared.wire.models import Run, SessionEntry


class ModelCallStore:
    def __init__(self, client: Redis, traffic: TrafficStore, budgets: BudgetStore, runs: RunStore) -> None:
        self._redis = client
        self._traffic = traffic
        self._budgets = budgets
        self._runs = runs

    def open(self, ask: Ask, reservation: Reservation) -> tuple[Admission, Refusal | None]:
        admitted, reserved = run_pipelined(self._redis, self._opening(ask, reservation))
        return self._opened(admitted, reserved)

    def memoize_and_open(
        self, memo: Memo, closing: CallClose | None, ask: Ask, reservation: Reservation
    ) -> tuple[bool, Admission, Refusal | None]:
        before = [*(self._closing(closing) if closing is not None else []), self._memoizing(memo)]
        *_, memoized, admitted, reserved = run_pipelined(
            self._redis, [*before, *self._opening(ask, reservation)]
        )
        return bool(memoized), *self._opened(admitted, reserved)

    def _opening(self, ask: Ask, reservation: Reservation) -> list[ScriptCall]:
        # The ticket is named here so the reservation, sent behind the admission, can hold it: the script
        # holds it only if the admission put it in flight.
        ticket = f"{ask.waiter}#{random.getrandbits(64):016x}"
        return [
            self._traffic.admit_call(ask, ticket),
            self._budgets.reserve_call(reservation, ticket, self._traffic.in_flight(ask.model)),
        ]

    @staticmethod
    def _opened(admitted: list[Any], reserved: list[Any]) -> tuple[Admission, Refusal | None]:
        answer = admission(admitted)
        return answer, refusal(reserved) if answer.ticket is not None else None

    def close(self, call: CallClose) -> None:
        run_pipelined(self._redis, self._closing(call))

    def close_and_memoize(self, call: CallClose, memo: Memo) -> bool:
        *_, memoized = run_pipelined(self._redis, [*self._closing(call), self._memoizing(memo)])
        return bool(memoized)

    def _memoizing(self, memo: Memo) -> ScriptCall:
        return self._runs.memoize_call(memo.run, memo.token, memo.state)

    def close_and_commit(
        self, call: CallClose, run: Run, session: SessionEntry | None, token: str, ending: Ending
    ) -> Committed:
        return self._runs.commit(run, session, token, ending, before=self._closing(call))

    def _closing(self, call: CallClose) -> list[ScriptCall]:
        return [
            self._traffic.settle_call(call.model, call.ticket, call.end),
            self._budgets.settle_call(call.charge, call.ticket),
        ]
