"""What every configuration section shares: its model base, the error, the common field types."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
)
from pydantic.alias_generators import to_camel

from clawbus.shared.base.errors import ClawbusError

DEFAULT_CONFIG_FILE = "clawbus.json5"
ENV_PREFIX = "CLAWBUS_"


class ConfigError(ClawbusError):
    """The configuration cannot be used; ``str()`` is the message to show the operator."""


class Section(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def clamped_int(low: int, high: int) -> BeforeValidator:
    def clamp(value: Any) -> Any:
        return max(low, min(high, value)) if isinstance(value, int) and not isinstance(value, bool) else value

    return BeforeValidator(clamp)


def _http_url(url: str) -> str:
    if not re.match(r"^https?://[^\s/]+", url):
        raise ValueError("must be an http:// or https:// URL")
    return url


HttpUrl = Annotated[str, AfterValidator(_http_url)]


def any_case(convert: Callable[[str], str]) -> BeforeValidator:
    """Text written in any case (``info``, ``Info``), validated in the one ``convert`` gives."""
    return BeforeValidator(lambda value: convert(value.strip()) if isinstance(value, str) else value)
