"""Sends and spawns on the real stack (tests/support/stack.py), through the client, for the tests that start
them and wait for their flows: sessions people have written in, a send whose announce goes to a channel,
a flow waited for until it is done."""

from __future__ import annotations

import uuid

from clawbus_client import Client
from clawbus_client.models import Flow, SendResult

from tests.support.processes import wait_for

# The webhook channels' shared secret, in the configurations of the tests that deliver to one.
SECRET = "webhook-shared-secret"


def unique(agent: str) -> tuple[str, str]:
    """A direct-chat session of ``agent`` and its webchat recipient."""
    peer = uuid.uuid4().hex[:8]
    return f"agent:{agent}:webchat:direct:{peer}", f"peer-{peer}"


def chat(client: Client, key: str, to: str) -> None:
    result = client.post_message(key, "hello", channel="webchat", to=to, timeout_seconds=20)
    assert isinstance(result, SendResult)
    assert result.status == "ok"


def requester(client: Client) -> tuple[str, str]:
    """A session someone wrote in over webchat (its announces are posted there), and that someone."""
    peer = uuid.uuid4().hex[:8]
    key = f"agent:main:webchat:direct:{peer}"
    result = client.post_message(key, "hello", channel="webchat", to=peer, timeout_seconds=20)
    assert isinstance(result, SendResult)
    return key, peer


def send_with_announce_to(client: Client, channel: str) -> str:
    """A session people reach through ``channel``, then a send to it: its announce goes to ``channel``."""
    target = f"agent:main:{channel}:direct:{uuid.uuid4().hex[:6]}"
    client.post_message(target, "hello", channel=channel, to="room-1", timeout_seconds=10)
    sent = client.sessions_send(target, "news?", timeout_seconds=10, caller="agent:main:cron:desk")
    assert isinstance(sent, SendResult)
    assert sent.status == "ok"  # whatever becomes of the delivery
    assert sent.flow_id is not None
    return sent.flow_id


def finished(client: Client, flow_id: str, timeout: float = 40) -> Flow:
    """The flow of a send or a spawn, once done (its delivery too)."""

    def done() -> Flow | None:
        flow = client.get_flow(flow_id)
        return flow if flow.status == "done" else None

    flow = wait_for(done, timeout, what="the flow")
    assert flow is not None  # wait_for returns only what is truthy
    return flow
