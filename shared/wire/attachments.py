"""The shapes of files handed to a spawned sub-agent (docs/contract.md §6), as ``sessions_spawn`` takes them
and answers with them; ``shared.domain.attachments`` validates and writes them."""

from __future__ import annotations

from typing import Literal

from clawbus_client import models as client
from pydantic import Field

from clawbus.shared.wire.models import Params, Wire


class AttachmentIn(Params):
    name: str = Field(max_length=255)
    content: str
    encoding: Literal["utf8", "base64"] = "utf8"
    mime_type: str | None = Field(None, max_length=255)


class AttachmentFile(client.AttachmentFile, Wire):
    pass


class AttachmentReceipt(client.AttachmentReceipt, Wire):
    """What was written for the child, as in ``.manifest.json``."""

    files: list[AttachmentFile]
