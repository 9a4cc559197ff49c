"""api/client.py: the thin client needs httpx and the pydantic models, nothing of the server side."""

from __future__ import annotations

import subprocess
import sys

SERVER_SIDE = ("json5", "shared.config", "celery", "fastapi", "redis", "workers", "api.app")


def test_importing_the_client_loads_nothing_of_the_server_side() -> None:
    probe = f"import sys, api.client; print(','.join(m for m in {SERVER_SIDE!r} if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
