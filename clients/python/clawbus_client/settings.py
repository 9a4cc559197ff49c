"""Where a client finds the API: ``CLAWBUS_URL`` and ``CLAWBUS_TOKEN``, else what ``clawbus up`` wrote into
its home folder (``CLAWBUS_HOME``, else ``~/.clawbus``), else the local default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

DEFAULT_URL = "http://127.0.0.1:8787"


def clawbus_home(env: Mapping[str, str] | None = None) -> Path:
    """``CLAWBUS_HOME``, else ``~/.clawbus`` (the server's ``clawbus up`` writes there too)."""
    env = os.environ if env is None else env
    return Path(env.get("CLAWBUS_HOME", "~/.clawbus")).expanduser()


def _state_file(name: str) -> str | None:
    path = clawbus_home() / name
    return path.read_text().strip() if path.is_file() else None


def default_url() -> str:
    return os.environ.get("CLAWBUS_URL") or _state_file("api-url") or DEFAULT_URL


def default_token() -> str | None:
    return os.environ.get("CLAWBUS_TOKEN") or _state_file("token")
