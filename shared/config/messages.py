"""``messages``: what happens to a message that arrives while its session is busy (``messages.queue``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from clawbus.shared.config.base import Section
from clawbus.shared.wire.models import QueueMode


class QueueConfig(Section):
    # OpenClaw 2026.9's defaults: steer into the running run, 500 ms debounce, cap 20, summarize.
    mode: QueueMode = "steer"
    # Queued messages of one session; past it ``drop`` decides: ``old`` drops the oldest queued, ``new``
    # refuses the newest, ``summarize`` folds the dropped ones into one line of the next run's input.
    cap: int = Field(20, ge=1, le=1000)
    drop: Literal["old", "new", "summarize"] = "summarize"
    debounce_ms: int = Field(500, ge=0, le=600_000)
    # A channel's own mode (``discord: "collect"``), over ``mode``, and its own debounce.
    by_channel: dict[str, QueueMode] = {}
    debounce_ms_by_channel: dict[str, Annotated[int, Field(ge=0, le=600_000)]] = {}


class MessagesConfig(Section):
    queue: QueueConfig = QueueConfig()
