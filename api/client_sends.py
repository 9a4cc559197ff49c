"""A send the thin client had answered ``accepted`` and then waited on, answered as the same send with a
wait would have been (the server's own rule, ``shared.wire.send_schema.result_of``). The CLI and the
stdio MCP proxy accept first so that they know the run to name (Ctrl-C) or cancel (a cancelled call)."""

from __future__ import annotations

from clawbus_client.models import Run, SendResult

from clawbus.shared.wire.models import Run as ServerRun
from clawbus.shared.wire.send_schema import result_of


def waited_send(sent: SendResult, run: Run | None) -> SendResult:
    ended = None if run is None else ServerRun.model_validate(run.wire())
    # What the accept said that the run does not (its exchange, a watch registered) rides on the answer.
    waited = result_of(sent.run_id, sent.session_key, ended).model_copy(
        update={"flow_id": sent.flow_id, "watched": sent.watched}
    )
    return SendResult.model_validate(waited.wire())
