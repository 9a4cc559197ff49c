"""sessions_send: its parameters and result (docs/contract.md §4).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from shared.models import (
    AgentRef,
    DeliveryState,
    Label,
    MessageText,
    Params,
    Run,
    RunStatus,
    SessionRef,
    Wire,
)


class SessionsSendParams(Params):
    session_key: SessionRef | None = Field(None, description="The target session's key (or use label).")
    label: Label | None = Field(None, description="The target session's label (instead of sessionKey).")
    agent_id: AgentRef | None = Field(None, description="With label: the agent whose label it is.")
    message: MessageText = Field(description="The message to send.")
    timeout_seconds: float = Field(
        30, ge=0, strict=True, description="Wait this long for the reply; 0 sends and returns at once."
    )
    queue_mode: Literal["followup", "reject", "interrupt"] | None = Field(
        None,
        description="If the target is busy: queue behind its runs (default), refuse (reject), or stop what "
        "it does for people and run next (interrupt).",
    )


class AnnounceDelivery(Wire):
    """What a send's result says of the announce's delivery (it is ``pending`` when the send returns)."""

    status: DeliveryState
    mode: Literal["announce"] = "announce"


class SendResult(Wire):
    run_id: str
    # busy: a session whose queue mode is ``reject`` was running (runId: its running run); nothing queued.
    status: Literal["accepted", "ok", "timeout", "error", "busy"]
    session_key: str
    reply: str | None = None
    error: str | None = None
    delivery: AnnounceDelivery | None = None
    flow_id: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> SendResult:
        if self.status in ("timeout", "error") and not self.error:
            raise ValueError(f"a {self.status} result needs an error text")
        return self


def timed_out(asked_seconds: float, cap_seconds: float | None = None) -> str:
    """``timed out after <n>s``: a wait held by an HTTP request lasts at most ``cap_seconds``
    (gateway.maxWaitSeconds), and then says so, lest the caller believe it waited what it asked for."""
    if cap_seconds is None or asked_seconds <= cap_seconds:
        return f"timed out after {asked_seconds:g}s"
    return (
        f"timed out after {cap_seconds:g}s (gateway.maxWaitSeconds={cap_seconds:g} caps a wait over HTTP; "
        f"{asked_seconds:g}s were asked for)"
    )


def result_of(
    run_id: str,
    session_key: str,
    timeout_seconds: float,
    run: Run | None,
    max_wait_seconds: float | None = None,
) -> SendResult:
    """What a send that waited for ``run`` returns (None or not ended: it timed out): a wait of
    ``timeout_seconds``, capped at ``max_wait_seconds`` when an HTTP request held it."""
    if run is None or not run.status.terminal:
        return SendResult(
            run_id=run_id,
            status="timeout",
            session_key=session_key,
            error=(
                f"{timed_out(timeout_seconds, max_wait_seconds)}; the run continues: read sessions_history "
                f"later or wait again with GET /v1/runs/{run_id}/wait"
            ),
        )
    if run.status is RunStatus.OK:
        return SendResult(
            run_id=run_id,
            status="ok",
            session_key=session_key,
            reply=run.reply or "",
            delivery=AnnounceDelivery(status="pending"),
        )
    return SendResult(
        run_id=run_id,
        status="error",
        session_key=session_key,
        error=run.error or f"run ended with status {run.status.value}",
    )
