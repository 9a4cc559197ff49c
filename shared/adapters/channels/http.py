"""Adapters that POST to an HTTP service: a signed webhook, and the Telegram, Discord and Slack APIs.

Network errors, timeouts and 5xx are retryable; a 4xx is not (a later attempt would get the same
answer), except a chat API's 429: their rate limits are part of normal operation and ask for a retry. A
webhook's 429 is the receiver refusing, like any other 4xx.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx

from clawbus.shared.adapters.http_clients import process_client
from clawbus.shared.config import ChatChannel, WebhookChannel
from clawbus.shared.ports.channel import DeliveryError
from clawbus.shared.wire.models import Delivery

SIGNATURE_HEADER = "X-Clawbus-Signature"


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post_json(
    url: str, body: bytes, headers: dict[str, str], timeout: float, *, retry_429: bool = True
) -> httpx.Response:
    if not url.startswith(("http://", "https://")):
        raise DeliveryError(f"refusing to deliver to a non-http(s) URL: {url}", retryable=False)
    try:
        response = process_client("deliveries").post(
            url, content=body, headers={"Content-Type": "application/json", **headers}, timeout=timeout
        )
    except httpx.InvalidURL as exc:  # not an HTTPError: a URL no retry will make usable
        raise DeliveryError(f"invalid URL: {exc}", retryable=False) from None
    except httpx.HTTPError as exc:
        raise DeliveryError(f"{type(exc).__name__}: {exc}", retryable=True) from None
    if response.status_code >= 500 or (response.status_code == 429 and retry_429):
        raise DeliveryError(f"HTTP {response.status_code}: {response.text[:200]}", retryable=True)
    if response.status_code >= 400:
        raise DeliveryError(f"HTTP {response.status_code}: {response.text[:200]}", retryable=False)
    return response


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def _require_to(delivery: Delivery) -> str:
    if not delivery.to:
        raise DeliveryError(
            f"no recipient: the session's deliveryContext has no 'to' for {delivery.channel}", retryable=False
        )
    return delivery.to


class WebhookAdapter:
    def __init__(self, config: WebhookChannel) -> None:
        self._config = config

    def send(self, delivery: Delivery) -> None:
        body = _json(
            {
                "deliveryId": delivery.delivery_id,
                "flowId": delivery.flow_id,
                "sessionKey": delivery.session_key,
                "channel": delivery.channel,
                "to": delivery.to,
                "accountId": delivery.account_id,
                "text": delivery.text,
                "createdAt": delivery.created_at,
            }
        )
        headers = {
            SIGNATURE_HEADER: signature(self._config.secret, body),
            # Retries carry the same id, so a receiver can drop a message it has already taken.
            "X-Clawbus-Delivery": delivery.delivery_id,
        }
        post_json(self._config.url, body, headers, self._config.timeout_seconds, retry_429=False)


class TelegramAdapter:
    """Bot API ``sendMessage``."""

    def __init__(self, config: ChatChannel) -> None:
        self._config = config

    def send(self, delivery: Delivery) -> None:
        url = f"{self._config.api_url}/bot{self._config.bot_token}/sendMessage"
        payload: dict[str, Any] = {"chat_id": _require_to(delivery), "text": delivery.text}
        if delivery.thread_id:  # a forum topic
            payload["message_thread_id"] = (
                int(delivery.thread_id) if delivery.thread_id.isdigit() else delivery.thread_id
            )
        body = _json(payload)
        post_json(url, body, {}, self._config.timeout_seconds)


# Discord's limit on a thread's name, and its public-thread channel type.
DISCORD_THREAD_NAME_MAX = 100
DISCORD_PUBLIC_THREAD = 11
# Minutes of silence before Discord archives the thread (a day; a message un-archives it).
DISCORD_AUTO_ARCHIVE_MINUTES = 1440


class DiscordAdapter:
    """``POST /channels/{id}/messages`` with a bot token."""

    def __init__(self, config: ChatChannel) -> None:
        self._config = config

    def send(self, delivery: Delivery) -> None:
        # A Discord thread is a channel of its own: its messages go to the thread's id.
        channel = delivery.thread_id or _require_to(delivery)
        post_json(
            self._url(f"/channels/{channel}/messages"), _json({"content": delivery.text}), *self._auth()
        )

    def start_thread(self, channel_id: str, name: str) -> str:
        """Discord's "start thread without message" on ``channel_id``; the new thread's id."""
        body = {
            "name": name[:DISCORD_THREAD_NAME_MAX],
            "type": DISCORD_PUBLIC_THREAD,
            "auto_archive_duration": DISCORD_AUTO_ARCHIVE_MINUTES,
        }
        response = post_json(self._url(f"/channels/{channel_id}/threads"), _json(body), *self._auth())
        try:
            thread_id = response.json()["id"]
        except (ValueError, KeyError, TypeError):
            raise DeliveryError(
                f"Discord answered a thread start with no id: {response.text[:200]}", retryable=False
            ) from None
        return str(thread_id)

    def _url(self, path: str) -> str:
        return f"{self._config.api_url}{path}"

    def _auth(self) -> tuple[dict[str, str], float]:
        return {"Authorization": f"Bot {self._config.bot_token}"}, self._config.timeout_seconds


class SlackAdapter:
    """``chat.postMessage``; Slack answers errors with HTTP 200 and ``ok: false``."""

    def __init__(self, config: ChatChannel) -> None:
        self._config = config

    def send(self, delivery: Delivery) -> None:
        url = f"{self._config.api_url}/chat.postMessage"
        headers = {"Authorization": f"Bearer {self._config.bot_token}"}
        response = post_json(
            url,
            _json(
                {"channel": _require_to(delivery), "text": delivery.text}
                | ({"thread_ts": delivery.thread_id} if delivery.thread_id else {})
            ),
            headers,
            self._config.timeout_seconds,
        )
        try:
            answer = response.json()
        except ValueError:
            raise DeliveryError(
                f"Slack answered with no JSON: {response.text[:200]}", retryable=True
            ) from None
        if not answer.get("ok"):
            error = answer.get("error", "unknown error")
            raise DeliveryError(f"Slack: {error}", retryable=error == "ratelimited")
