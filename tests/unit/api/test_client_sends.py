"""api/client_sends.py: a send the CLI or the MCP proxy waited for answers as the server's waited send."""

from __future__ import annotations

from clawbus_client.models import SendResult

from clawbus.api.client_sends import waited_send


def test_a_waited_send_not_ended_keeps_its_flow_and_its_watch() -> None:
    sent = SendResult.model_validate(
        {
            "runId": "r1",
            "status": "accepted",
            "sessionKey": "agent:main:peer",
            "targetDisposition": "queued",
            "delivery": {"status": "pending"},
            "flowId": "f1",
            "watched": True,
        }
    )
    waited = waited_send(sent, None)
    assert (waited.status, waited.flow_id, waited.watched) == ("accepted", "f1", True)
