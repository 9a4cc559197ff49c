"""Logging rules shared by every process."""

from __future__ import annotations

import logging


def keep_secrets_out() -> None:
    """httpx logs each request's URL at INFO, and a Telegram Bot API URL carries the bot token: the HTTP
    clients log warnings and errors only."""
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
