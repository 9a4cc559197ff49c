"""sessions_send: its parameters and result (docs/contract.md §4).

Kept apart from the tool's code, which needs the store: a thin client imports these alone.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from clawbus_client import models as client
from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from clawbus.shared.base.tool_args import optional_text, refused, required, required_text, whole_number
from clawbus.shared.wire.models import DeliveryState, Params, Run, RunStatus, Wire, message_size


def _message_aliases(data: Any) -> Any:
    """The release reads the message from ``SendMessage``, ``content`` or ``text`` when ``message`` is no
    text: what a model names it is not always what the schema says."""
    if not isinstance(data, dict) or _text(data.get("message")):
        return data
    alias = next((data[name] for name in ("SendMessage", "content", "text") if _text(data.get(name))), None)
    return data if alias is None else {**data, "message": alias}


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


SendMode = Literal["notify", "steer", "followup", "resume"]


def _mode(value: Any) -> Any:
    if value is None or value == "":
        return None
    if value not in ("notify", "steer", "followup", "resume"):
        raise refused("mode must be notify, steer, followup, or resume")
    return value


DEFAULT_TIMEOUT_SECONDS = 30


class SessionsSendParams(Params):
    session_key: Annotated[str | None, optional_text] = Field(
        None, description="The target session's key (or use label)."
    )
    label: Annotated[str | None, optional_text] = Field(
        None, max_length=512, description="The target session's label (instead of sessionKey)."
    )
    agent_id: Annotated[str | None, optional_text] = Field(
        None, max_length=64, description="With label: the agent whose label it is; alone: its main session."
    )
    message: Annotated[str, required_text("message"), AfterValidator(message_size)] = Field(
        **required(), description="The message to send."
    )
    timeout_seconds: Annotated[int | None, whole_number("timeoutSeconds", least=0)] = Field(
        None,
        ge=0,
        description="Wait this long for the reply; 0 sends and returns at once.",
        json_schema_extra={"default": DEFAULT_TIMEOUT_SECONDS},
    )
    mode: Annotated[SendMode | None, BeforeValidator(_mode)] = Field(
        None,
        description="followup (default): a turn of its own; steer: into the target's running turn (no "
        "wait, no reply); notify: context for the target's next turn, starting none.",
    )
    # True: the caller hears of the target's later changes (docs/contract.md §10, "Watches and notices");
    # anything but true is no watch, as the release reads it.
    watch: Annotated[bool, BeforeValidator(lambda value: value is True)] = Field(
        False,
        description="Be told, in your next turn, when someone else changes the target session after this "
        "send (reconcile with session_status changesSince).",
    )
    # clawbus's own: what a busy target does with it (docs/contract.md §11).
    queue_mode: Literal["followup", "reject", "interrupt"] | None = Field(
        None,
        description="If the target is busy: queue behind its runs (default), refuse (reject), or stop what "
        "it does for people and run next (interrupt).",
    )

    _aliases = model_validator(mode="before")(_message_aliases)

    @property
    def wait_seconds(self) -> int:
        return DEFAULT_TIMEOUT_SECONDS if self.timeout_seconds is None else self.timeout_seconds


class AnnounceDelivery(client.AnnounceDelivery, Wire):
    """What a send's result says of the announce's delivery (it is ``pending`` when the send returns)."""

    status: DeliveryState
    mode: Literal["announce"] = "announce"


# A waited send whose run ended with no visible reply.
NO_REPLY_MESSAGE = "No visible reply or pending announcement. Continue or retry if needed."


class SendResult(client.SendResult, Wire):
    status: Literal["accepted", "ok", "no_reply", "timeout", "error", "busy"]
    target_disposition: Literal["queued", "steered"] | None = None
    delivery: AnnounceDelivery | None = None

    @model_validator(mode="after")
    def _shape(self) -> SendResult:
        if self.status in ("timeout", "error") and not self.error:
            raise ValueError(f"a {self.status} result needs an error text")
        return self


def accepted(run_id: str, session_key: str, flow_id: str | None = None) -> SendResult:
    """The run is under way: sent without a wait, or waited for and not ended yet (the release's words
    for both)."""
    return SendResult(
        run_id=run_id,
        status="accepted",
        session_key=session_key,
        target_disposition="queued",
        delivery=AnnounceDelivery(status="pending"),
        flow_id=flow_id,
    )


def result_of(run_id: str, session_key: str, run: Run | None) -> SendResult:
    """What a send that waited for ``run`` returns: a run not ended (None, or still going) is accepted."""
    if run is None or not run.status.terminal:
        return accepted(run_id, session_key)
    if run.status is RunStatus.OK:
        reply = run.reply or ""
        if reply.strip() in ("", "NO_REPLY"):
            return SendResult(
                run_id=run_id, status="no_reply", session_key=session_key, message=NO_REPLY_MESSAGE
            )
        return SendResult(
            run_id=run_id,
            status="ok",
            session_key=session_key,
            delivery=AnnounceDelivery(status="pending"),
            reply=reply,
        )
    return SendResult(
        run_id=run_id,
        status="timeout" if run.status is RunStatus.TIMEOUT else "error",
        session_key=session_key,
        error=run.error or f"run ended with status {run.status.value}",
        sent_before_error=True,
    )


class NotifyResult(client.NotifyResult, Wire):
    """``mode: "notify"``: the message is queued as context for the target's next turn; no run of the
    target's agent is started for it (docs/contract.md §4)."""

    status: Literal["queued"] = "queued"
    # The release's notification lives as long as its gateway process ("process"); clawbus's is an
    # accepted run in Redis, which outlives any process (docs/contract.md, differences: send-notify).
    durability: Literal["durable"] = "durable"
    run_started: Literal[False] = False
