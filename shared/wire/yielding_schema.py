"""sessions_yield: its parameters and result (docs/contract.md, "Orchestration").

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from clawbus.shared.base.tool_args import optional_text
from clawbus.shared.wire.models import Params, Wire


class SessionsYieldParams(Params):
    message: Annotated[str | None, optional_text] = Field(
        None, max_length=20_000, description="This turn's reply, if any (the turn ends with it)."
    )
    wait_for: Annotated[str | None, optional_text] = Field(None, description='What to wait for: "message".')


class YieldResult(Wire):
    status: Literal["yielded"] = "yielded"
    # The children still to report: the session is woken once, when the last of them has.
    waiting_for: int
    note: str = (
        "Your turn ends now. You will be woken once, when every sub-agent you spawned has reported, with "
        "all their reports."
    )
