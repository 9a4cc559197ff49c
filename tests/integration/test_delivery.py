"""Announce deliveries through a real deliver task on the delivery queue: retries with backoff on a
receiver's 5xx, no retry on a 4xx, and the final state on the flow; the send itself is never failed."""

from __future__ import annotations

import hashlib
import hmac

from clawbus_client import Client

from tests.support.exchanges import SECRET, finished, send_with_announce_to
from tests.support.fake_http import FakeServer, fake_server
from tests.support.stack import TOKEN, Fresh


def verify(receiver: FakeServer) -> None:
    for request in receiver.requests:
        expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
        assert hmac.compare_digest(request.headers["X-Clawbus-Signature"], expected)


def test_a_webhook_that_fails_with_500_is_retried_until_it_takes_the_message_and_a_400_is_not(
    fresh: Fresh,
) -> None:
    with (
        fake_server((500, {"error": "busy"}), (200, {"ok": True})) as flaky,
        fake_server((400, {"error": "no such room"})) as refusing,
    ):
        fresh.start_redis(
            config={
                "channels": {
                    "flaky": {"type": "webhook", "url": flaky.url, "secret": SECRET},
                    "refusing": {"type": "webhook", "url": refusing.url, "secret": SECRET},
                },
                "delivery": {"maxAttempts": 4, "backoffSeconds": 0.2},
                "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            }
        )
        fresh.worker()
        _, url = fresh.api()
        with Client(url, TOKEN) as client:
            retried = finished(client, send_with_announce_to(client, "flaky"))
            refused = finished(client, send_with_announce_to(client, "refusing"))

    assert retried.delivery_status == "delivered"
    assert retried.delivery is not None
    assert retried.delivery.attempts == 2
    assert len(flaky.requests) == 2
    # Both attempts are the same delivery, so a receiver can drop a duplicate.
    assert len({r.headers["X-Clawbus-Delivery"] for r in flaky.requests}) == 1
    verify(flaky)

    assert refused.delivery_status == "failed"
    assert refused.delivery is not None
    assert refused.delivery.attempts == 1
    assert "HTTP 400" in (refused.delivery.last_error or "")
    assert len(refusing.requests) == 1
