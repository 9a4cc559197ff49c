"""Where the embedded deployment keeps its state (API token, API URL, private Redis data).

Its own module so that the thin client (``api.client``) can find what ``clawbus up`` wrote without
importing the configuration loader.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def clawbus_home(env: Mapping[str, str] | None = None) -> Path:
    """``CLAWBUS_HOME``, else ``~/.clawbus``."""
    env = os.environ if env is None else env
    return Path(env.get("CLAWBUS_HOME", "~/.clawbus")).expanduser()
