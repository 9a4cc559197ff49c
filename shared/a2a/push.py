"""A2A push notifications (docs/contract.md §12): when a task ends, each webhook its client registered gets
the task, once delivered, with retries and backoff as a channel delivery has, signed as the webhook
adapter signs.

Durable as a delivery is: a registered config puts its task on the due set, so a reaper pass sends what a
lost worker or API process did not (a run's end sends at once; the due set only catches what was missed).
One attempt at a time per task (a lease), each config's outcome recorded, so nothing is sent twice once
delivered.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from a2a.types import StreamResponse, TaskPushNotificationConfig
from google.protobuf.json_format import MessageToDict, ParseDict

from clawbus.shared.a2a.tasks import context_of, task_of
from clawbus.shared.adapters.channels.http import SIGNATURE_HEADER, post_json, signature
from clawbus.shared.base import backoff
from clawbus.shared.config import Config
from clawbus.shared.ports.channel import DeliveryError
from clawbus.shared.ports.dispatch import Dispatcher
from clawbus.shared.ports.storage import Storage

log = logging.getLogger(__name__)

# A task whose run has not ended is looked at again this often, in case its end's notice was lost.
RECHECK_MS = 10_000
# How long one attempt holds a task's notifications before another may take them over.
ATTEMPT_LEASE_MS = 60_000
TIMEOUT_SECONDS = 10.0
TOKEN_HEADER = "X-A2A-Notification-Token"
DELIVERY_HEADER = "X-Clawbus-Delivery"


def invalid(url: str) -> str | None:
    """Why ``url`` cannot take notifications (None: it can)."""
    refused = f"a push notification URL must be http(s)://host/...: {url!r}"
    try:
        parts = urlsplit(url)
        _port = parts.port  # raises on a port that is not a number
        httpx.URL(url)
    except (ValueError, httpx.InvalidURL):
        return refused
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return refused
    return None


def register(store: Storage, dispatcher: Dispatcher, config: TaskPushNotificationConfig) -> None:
    """Keep the config; a task that has already ended is notified now."""
    now = store.clock.now_ms()
    store.a2a.put_push(config.task_id, config.id, MessageToDict(config), due_at_ms=now + RECHECK_MS)
    run = store.runs.get(config.task_id)
    if run is not None and run.status.terminal:
        store.a2a.push_due(config.task_id, now)
        dispatcher.notify(config.task_id)


def run_ended(store: Storage, dispatcher: Dispatcher, run_id: str, session_key: str) -> None:
    """A run ended: if it is an A2A task with configs, its notifications go now."""
    if context_of(session_key) is None:
        return
    if store.a2a.push_configs(run_id):
        store.a2a.push_due(run_id, store.clock.now_ms())
        dispatcher.notify(run_id)


def sweep(store: Storage, dispatcher: Dispatcher, limit: int) -> int:
    """The reaper's share: tasks due whose run has ended get their notifications sent; the others are
    looked at again later. Returns how many were sent on."""
    now = store.clock.now_ms()
    sent = 0
    for run_id in store.a2a.pushes_due(now, limit):
        run = store.runs.get(run_id)
        if run is None:
            store.a2a.push_done(run_id)
        elif run.status.terminal:
            # Due again first: an attempt that ends before this line would otherwise be undone by it.
            store.a2a.push_due(run_id, now + ATTEMPT_LEASE_MS)
            dispatcher.notify(run_id)
            sent += 1
        else:
            store.a2a.push_due(run_id, now + RECHECK_MS)
    return sent


@dataclass(frozen=True, slots=True)
class Outcome:
    delivered: int = 0
    failed: int = 0
    # Seconds until the next attempt, when one failed in a way a retry may fix.
    retry_in: float | None = None


def deliver(store: Storage, config: Config, run_id: str) -> Outcome:
    """Send the task's notifications that are not yet delivered or given up on."""
    run = store.runs.get(run_id)
    if run is None or not run.status.terminal:
        return Outcome()
    configs = store.a2a.push_configs(run_id)
    owner = f"push-{time.monotonic_ns()}"
    # Long enough for every config's post to time out: a lease lapsing mid-attempt would let a second
    # attempt send the same notifications.
    lease_ms = max(ATTEMPT_LEASE_MS, len(configs) * int((TIMEOUT_SECONDS + 5) * 1000))
    if not store.a2a.claim_push(run_id, owner, lease_ms):
        return Outcome()
    try:
        [asked] = store.runs.inputs([run_id])
        task = task_of(run, asked.text if asked else None)
        body = json.dumps(MessageToDict(StreamResponse(task=task)), separators=(",", ":")).encode()
        states = store.a2a.push_states(run_id)
        delivered = failed = 0
        retry_in: float | None = None
        for config_id, raw in configs.items():
            state = states.get(config_id, {})
            if state.get("status") in ("delivered", "failed"):
                continue
            attempts = int(state.get("attempts", 0)) + 1
            target = ParseDict(raw, TaskPushNotificationConfig(), ignore_unknown_fields=True)
            try:
                _post(target, body, f"{run_id}/{config_id}")
            except DeliveryError as exc:
                settings = config.delivery
                if exc.retryable and attempts < settings.max_attempts:
                    pause = backoff.delay(attempts, settings.backoff_seconds, settings.max_backoff_seconds)
                    log.warning(
                        "push %s/%s attempt %d failed (%s); again in %.1fs",
                        run_id,
                        config_id,
                        attempts,
                        exc,
                        pause,
                    )
                    store.a2a.set_push_state(run_id, config_id, _state("pending", attempts, str(exc)))
                    retry_in = pause if retry_in is None else min(retry_in, pause)
                    continue
                log.warning("push %s/%s failed after %d attempt(s): %s", run_id, config_id, attempts, exc)
                store.a2a.set_push_state(run_id, config_id, _state("failed", attempts, str(exc)))
                failed += 1
                continue
            store.a2a.set_push_state(run_id, config_id, _state("delivered", attempts))
            delivered += 1
        if retry_in is None:
            store.a2a.push_done(run_id)
        else:
            store.a2a.push_due(run_id, store.clock.now_ms() + int(retry_in * 1000) + ATTEMPT_LEASE_MS)
        return Outcome(delivered, failed, retry_in)
    finally:
        store.a2a.release_push(run_id, owner)


def _post(target: TaskPushNotificationConfig, body: bytes, delivery_id: str) -> None:
    headers = {DELIVERY_HEADER: delivery_id}
    if target.token:
        headers[TOKEN_HEADER] = target.token
        headers[SIGNATURE_HEADER] = signature(target.token, body)
    if target.HasField("authentication") and target.authentication.scheme:
        headers["Authorization"] = (
            f"{target.authentication.scheme} {target.authentication.credentials}".strip()
        )
    post_json(target.url, body, headers, TIMEOUT_SECONDS, retry_429=False)


def _state(status: str, attempts: int, error: str | None = None) -> dict[str, Any]:
    return {"status": status, "attempts": attempts, **({"error": error} if error else {})}
