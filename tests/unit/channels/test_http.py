"""shared/adapters/channels/http.py against real HTTP servers on loopback: request shapes, signatures,
errors."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from clawbus.shared.adapters.channels.http import (
    DiscordAdapter,
    SlackAdapter,
    TelegramAdapter,
    WebhookAdapter,
)
from clawbus.shared.config import ChatChannel, WebhookChannel
from clawbus.shared.ports.channel import DeliveryError
from clawbus.shared.wire.models import Delivery
from tests.support.fake_http import fake_server

SECRET = "s3cret-webhook-key"


def delivery(to: str | None = "chat-9", channel: str = "crm") -> Delivery:
    return Delivery(
        delivery_id="d1",
        flow_id="f1",
        session_key="agent:main:main",
        channel=channel,
        to=to,
        text="the announce",
        status="pending",
        created_at=1,
        updated_at=1,
    )


def webhook(url: str) -> WebhookAdapter:
    return WebhookAdapter(WebhookChannel(type="webhook", url=url, secret=SECRET, timeout_seconds=2))


def test_the_webhook_signature_verifies_at_the_receiver() -> None:
    with fake_server() as receiver:
        webhook(receiver.url + "/hook").send(delivery())
    request = receiver.requests[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), request.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(request.headers["X-Clawbus-Signature"], expected)
    assert request.headers["X-Clawbus-Delivery"] == "d1"
    assert request.json()["text"] == "the announce"
    assert request.json()["to"] == "chat-9"


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(500, True), (503, True), (429, False), (400, False), (404, False), (401, False)],
)
def test_webhook_errors_are_retryable_only_for_5xx(status: int, retryable: bool) -> None:
    with fake_server((status, {"error": "x"})) as receiver, pytest.raises(DeliveryError) as caught:
        webhook(receiver.url).send(delivery())
    assert caught.value.retryable is retryable


def test_a_chat_api_rate_limit_is_retryable() -> None:
    with fake_server((429, {"ok": False})) as api, pytest.raises(DeliveryError) as caught:
        TelegramAdapter(ChatChannel(type="telegram", bot_token="123:abc", base_url=api.url)).send(delivery())
    assert caught.value.retryable


def test_a_network_error_is_retryable() -> None:
    with fake_server() as receiver:
        url = receiver.url
    with pytest.raises(DeliveryError) as caught:  # the server is gone: connection refused
        webhook(url).send(delivery())
    assert caught.value.retryable


def test_a_non_http_url_is_refused_without_a_request() -> None:
    adapter = WebhookAdapter(
        WebhookChannel.model_construct(
            type="webhook", url="file:///etc/passwd", secret=SECRET, timeout_seconds=1
        )
    )
    with pytest.raises(DeliveryError, match="non-http"):
        adapter.send(delivery())


def test_telegram_send_message() -> None:
    with fake_server((200, {"ok": True, "result": {}})) as api:
        TelegramAdapter(ChatChannel(type="telegram", bot_token="123:abc", base_url=api.url)).send(delivery())
    request = api.requests[0]
    assert request.path == "/bot123:abc/sendMessage"
    assert request.json() == {"chat_id": "chat-9", "text": "the announce"}


def test_discord_channel_message() -> None:
    with fake_server((200, {"id": "1"})) as api:
        DiscordAdapter(ChatChannel(type="discord", bot_token="tok", base_url=api.url)).send(delivery("555"))
    request = api.requests[0]
    assert request.path == "/channels/555/messages"
    assert request.headers["Authorization"] == "Bot tok"
    assert request.json() == {"content": "the announce"}


def test_slack_post_message_and_its_ok_false_errors() -> None:
    adapter_config = ChatChannel.model_construct(
        type="slack", bot_token="xoxb-1", base_url="", timeout_seconds=2
    )
    with fake_server(
        (200, {"ok": True}),
        (200, {"ok": False, "error": "channel_not_found"}),
        (200, {"ok": False, "error": "ratelimited"}),
    ) as api:
        adapter = SlackAdapter(adapter_config.model_copy(update={"base_url": api.url}))
        adapter.send(delivery("C1"))
        with pytest.raises(DeliveryError) as permanent:
            adapter.send(delivery("C1"))
        with pytest.raises(DeliveryError) as limited:
            adapter.send(delivery("C1"))
    assert api.requests[0].path == "/chat.postMessage"
    assert api.requests[0].headers["Authorization"] == "Bearer xoxb-1"
    assert api.requests[0].json() == {"channel": "C1", "text": "the announce"}
    assert permanent.value.retryable is False
    assert limited.value.retryable is True


def test_chat_apis_need_a_recipient() -> None:
    with pytest.raises(DeliveryError, match="no recipient") as caught:
        TelegramAdapter(ChatChannel(type="telegram", bot_token="t")).send(delivery(to=None))
    assert not caught.value.retryable


def test_a_delivery_bound_to_a_thread_goes_into_it_on_each_chat_api() -> None:
    threaded = delivery("555").model_copy(update={"thread_id": "777"})
    with fake_server((200, {"ok": True, "result": {}}), (200, {"id": "1"}), (200, {"ok": True})) as api:
        TelegramAdapter(ChatChannel(type="telegram", bot_token="1:a", base_url=api.url)).send(threaded)
        DiscordAdapter(ChatChannel(type="discord", bot_token="tok", base_url=api.url)).send(threaded)
        slack = ChatChannel.model_construct(type="slack", bot_token="x", base_url=api.url, timeout_seconds=2)
        SlackAdapter(slack).send(threaded)
    telegram, discord, slack_request = api.requests
    assert telegram.json() == {"chat_id": "555", "text": "the announce", "message_thread_id": 777}  # a topic
    assert discord.path == "/channels/777/messages"  # a Discord thread is a channel of its own
    assert slack_request.json() == {"channel": "555", "text": "the announce", "thread_ts": "777"}
