"""The store port: everything the domain asks of storage, in the domain's words (as procrastinate's
``BaseConnector`` or dramatiq's ``Broker``). ``shared.store.Store`` is its Redis adapter; the domain types
against ``Storage`` and never sees a Redis key, a script or a stream cursor.

Composition roots (the workers' context, the API's services, ``workers.testing.world``) build the adapter;
everything under them takes a ``Storage``.

A method's contract is written here, once; the adapter's method says only how it keeps it, where that is
worth saying (``Traffic``, ``Budgets`` and ``IdempotencyKeys`` are described in the modules they name).
"""

from __future__ import annotations

from typing import Protocol

from clawbus.shared.base.clock import Clock
from clawbus.shared.ports.storage.a2a import A2ARecords
from clawbus.shared.ports.storage.budgets import Budgets
from clawbus.shared.ports.storage.calls import ModelCalls
from clawbus.shared.ports.storage.errors import (
    ColdStoreUnavailable,
    NotReplicated,
    StoreFull,
    StoreUnavailable,
)
from clawbus.shared.ports.storage.fleet import Fleet
from clawbus.shared.ports.storage.flows import Flows
from clawbus.shared.ports.storage.idempotency import IdempotencyKeys
from clawbus.shared.ports.storage.runs import Runs
from clawbus.shared.ports.storage.sessions import Sessions
from clawbus.shared.ports.storage.state import StateLog
from clawbus.shared.ports.storage.threads import ThreadBindings
from clawbus.shared.ports.storage.traffic import Traffic
from clawbus.shared.ports.storage.transcripts import Transcripts

__all__ = [
    "A2ARecords",
    "Budgets",
    "ColdStoreUnavailable",
    "Fleet",
    "Flows",
    "IdempotencyKeys",
    "ModelCalls",
    "NotReplicated",
    "Runs",
    "Sessions",
    "StateLog",
    "Storage",
    "StoreFull",
    "StoreUnavailable",
    "ThreadBindings",
    "Traffic",
    "Transcripts",
]


class Storage(Protocol):
    """The whole port: one repository per concern, and the clock every timestamp comes from."""

    @property
    def clock(self) -> Clock: ...
    @property
    def sessions(self) -> Sessions: ...
    @property
    def transcripts(self) -> Transcripts: ...
    @property
    def runs(self) -> Runs: ...
    @property
    def flows(self) -> Flows: ...
    @property
    def fleet(self) -> Fleet: ...
    @property
    def threads(self) -> ThreadBindings: ...
    @property
    def a2a(self) -> A2ARecords: ...
    @property
    def traffic(self) -> Traffic: ...
    @property
    def budgets(self) -> Budgets: ...
    @property
    def calls(self) -> ModelCalls: ...
    @property
    def idempotency(self) -> IdempotencyKeys: ...
    @property
    def state(self) -> StateLog: ...
