"""What every operation of the application works with: the configuration and the two ports, bundled once.

The composition roots build it (a worker's ``WorkerContext``, the API's ``Services``, the test world) and
each narrower context extends it with what its job adds: a tool call's caller (``ToolContext``), a flow
step's inline runs (``FlowContext``). A function that needs only the three takes a ``Context``, so any of
them can be handed in as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from clawbus.shared.config import Config
from clawbus.shared.ports.dispatch import Dispatcher
from clawbus.shared.ports.storage import Storage


@dataclass(frozen=True, slots=True)
class Context:
    config: Config
    store: Storage
    dispatcher: Dispatcher
