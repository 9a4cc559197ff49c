"""What the processes log: never an API token, never an attachment's content, whatever the traffic."""

from __future__ import annotations

import uuid

from clawbus_client import Client
from clawbus_client.models import SpawnResult

from tests.support.exchanges import finished, requester
from tests.support.stack import TOKEN, Fresh


def test_no_log_line_carries_a_token_or_an_attachment(fresh: Fresh) -> None:
    secret = f"ATTACHMENT-SECRET-{uuid.uuid4().hex}"
    fresh.start_redis(
        config={
            "agents": {"list": [{"id": "main", "default": True, "workspace": str(fresh.root / "ws")}]},
            "tools": {"sessions_spawn": {"attachments": {"enabled": True}}},
        }
    )
    worker = fresh.worker()
    api, url = fresh.api()
    with Client(url, TOKEN) as client:
        caller, _peer = requester(client)
        spawned = SpawnResult.model_validate(
            client.invoke(
                "sessions_spawn",
                {"task": "read the notes", "attachments": [{"name": "notes.txt", "content": secret}]},
                caller=caller,
            )
        )
        finished(client, spawned.run_id)
        client.sessions_history(spawned.child_session_key, include_tools=True, caller=caller)
    assert "clawbus.run" in worker.output()  # the worker logged the work it did
    for output in (worker.output(), api.output()):
        assert TOKEN not in output
        assert secret not in output
