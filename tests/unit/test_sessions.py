"""shared/domain/sessions.py: where a session's messages are posted."""

from __future__ import annotations

import pytest

from clawbus.shared.domain.sessions import Route, new_entry, route_of
from clawbus.shared.wire.models import DeliveryContext
from tests.conftest import make_config


def entry(key: str, **fields: object):  # type: ignore[no-untyped-def]
    return new_entry(make_config(), key, 1).model_copy(update=fields)


@pytest.mark.parametrize(
    ("key", "fields", "route"),
    [
        (
            "agent:main:discord:group:42",
            {"delivery_context": DeliveryContext(channel="slack", to="C9", account_id="a")},
            Route("slack", "C9", "a"),
        ),
        ("agent:main:main", {"last_channel": "telegram", "last_to": "77"}, Route("telegram", "77")),
        ("agent:main:discord:group:42", {}, Route("discord", "42")),
        ("agent:main:discord:group:42:thread:7", {}, Route("discord", "42", thread_id="7")),
        ("agent:main:slack:direct:u1", {}, Route("slack", "u1")),
        ("agent:main:cron:nightly", {}, Route("log", "agent:main:cron:nightly")),
    ],
)
def test_the_route_is_the_delivery_context_then_the_last_route_then_the_key_then_the_log(
    key: str, fields: dict[str, object], route: Route
) -> None:
    assert route_of(entry(key, **fields)) == route
