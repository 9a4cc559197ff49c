"""A thin client for the clawbus HTTP API: httpx, httpx-sse and pydantic, nothing of the server.

Sync (``Client``) and async (``AsyncClient``), the same methods; every call that creates or changes work
carries an ``Idempotency-Key`` and is sent again with it while its answer is lost, so a retry never makes a
second run.
"""

from clawbus_client.aio import AsyncClient
from clawbus_client.calls import IDEMPOTENT_ATTEMPTS, WORK_TOOLS, Call
from clawbus_client.errors import APIError
from clawbus_client.sync import Client

__all__ = ["IDEMPOTENT_ATTEMPTS", "WORK_TOOLS", "APIError", "AsyncClient", "Call", "Client"]
__version__ = "0.1.0"
