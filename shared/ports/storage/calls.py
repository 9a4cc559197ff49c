"""Model calls in flight, and their closing.
One repository of the storage port (``shared.ports.storage``)."""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.domain.budgets import Refusal, Reservation
from clawbus.shared.domain.runs import (
    Committed,
    Ending,
    Memo,
)
from clawbus.shared.domain.traffic import Admission, Ask, CallClose
from clawbus.shared.wire.models import (
    Run,
    SessionEntry,
)


class ModelCalls(Protocol):
    """A model call's gate, one round trip each way (``shared.store.model_calls``)."""

    def open(self, ask: Ask, reservation: Reservation) -> tuple[Admission, Refusal | None]:
        """Admit the call within its model's limits and reserve its worst case against its budgets
        together. Not admitted: the admission says how long to wait and nothing is reserved. Admitted and
        refused by a budget: the refusal (the caller settles the call unsent)."""
        ...

    def close(self, call: CallClose) -> None:
        """The call is over: settle it in its model's traffic and charge its spend, together."""
        ...

    def close_and_memoize(self, call: CallClose, memo: Memo) -> bool:
        """``close`` and ``Runs.memoize`` in one round trip (a step that called tools is over): False if
        the lease was lost (the memo is not written; the call is closed all the same)."""
        ...

    def memoize_and_open(
        self, memo: Memo, closing: CallClose | None, ask: Ask, reservation: Reservation
    ) -> tuple[bool, Admission, Refusal | None]:
        """The loop state after tool calls that only read, memoized with the last call's settling (when
        it still waits) and ``open`` of the next call, in one round trip: False first if the lease was
        lost (the memo is not written; the next call is admitted all the same, for the caller to close
        unsent)."""
        ...

    def close_and_commit(
        self, call: CallClose, run: Run, session: SessionEntry | None, token: str, ending: Ending
    ) -> Committed:
        """``close`` and ``Runs.commit`` in one round trip (the run's last step is over): the call is closed
        whether or not the commit happens."""
        ...
