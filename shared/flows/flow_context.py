"""What a flow step works with: the configuration, the store, the dispatcher (a ``Context``), and whether
it may run the step's run itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clawbus.shared.domain.runs import LaneHead, NewRun
from clawbus.shared.intake.submit import submit
from clawbus.shared.ports.context import Context
from clawbus.shared.wire.models import SessionEntry


@dataclass(frozen=True, slots=True)
class FlowContext(Context):
    # Set by a step task that executes the step's run itself when the run may start at once (its lane is
    # free), saving a queue hop per step; otherwise runs are dispatched like any other.
    run_inline: Callable[[LaneHead], object] | None = None

    @classmethod
    def within(cls, ctx: Context) -> FlowContext:
        """A flow step's context on ``ctx``'s ports, its runs dispatched (none run inline)."""
        return cls(ctx.config, ctx.store, ctx.dispatcher)

    def start(self, session: SessionEntry, new: NewRun) -> None:
        accepted = submit(
            self.store.runs, self.dispatcher, session, {}, new, dispatch=self.run_inline is None
        )
        if accepted.is_head and self.run_inline is not None:
            self.run_inline(LaneHead(new.run_id, session.key, new.kind, new.flow_id))
