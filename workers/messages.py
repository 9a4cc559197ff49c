"""A lane head's task message and its task-sent event, rendered as kombu's Redis transport stores them,
for the accept script to push itself when the run is its lane's head (docs/architecture.md, "How a run
moves"): accepting and enqueueing a send's run is then one round trip, without Celery's publishing
machinery on the request's path (it cost more than the accept itself).

Celery builds the message (``amqp.create_task_message``) and kombu's own channel wraps it, so the bytes
are the ones ``send_task`` would have written; only the Redis commands are the script's.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from celery import Celery
from celery.events.event import Event
from celery.utils.nodenames import anon_nodename
from celery.utils.time import utcoffset
from kombu.serialization import dumps

from clawbus.shared.domain.runs import Enqueue, LaneHead
from clawbus.workers import queues

EVENT_EXCHANGE = "celeryev"
SENT_EVENT = "task-sent"


class RunMessages:
    def __init__(self, app: Celery) -> None:
        self._app = app
        self._hostname = anon_nodename()
        self._lock = threading.Lock()
        self._channel: Any = None

    def render(self, head: LaneHead) -> Enqueue:
        queue = queues.queue_for(head.kind)
        channel = self._kombu_channel()
        args = [head.run_id, head.session_key]
        headers, properties, body, sent = self._app.amqp.create_task_message(
            head.run_id,
            queues.RUN_TASK,
            args,
            {},
            # Two ids: their repr is what Celery's saferepr would make of them, at a fraction of its cost
            # on every accept's path.
            argsrepr=repr(args),
            kwargsrepr="{}",
            reply_to=self._app.thread_oid,
            root_id=head.flow_id or head.run_id,
            ignore_result=True,
            create_sent_event=self._app.conf.task_send_sent_event,
        )
        message = self._envelope(channel, body, headers, {**properties, "delivery_mode": 2}, "", queue)
        if not sent:
            return Enqueue(channel._q_for_pri(queue, 0), message, "", "")
        event = Event(
            SENT_EVENT,
            hostname=self._hostname,
            utcoffset=utcoffset(),
            pid=os.getpid(),
            clock=self._app.clock.forward(),
            **sent,
            queue=queue,
            exchange="",
            routing_key=queue,
        )
        routing_key = SENT_EVENT.replace("-", ".")
        published = self._envelope(
            channel, event, {"hostname": self._hostname}, {"delivery_mode": 1}, EVENT_EXCHANGE, routing_key
        )
        topic = channel._get_publish_topic(EVENT_EXCHANGE, routing_key)
        return Enqueue(channel._q_for_pri(queue, 0), message, topic, published)

    @staticmethod
    def _envelope(
        channel: Any, body: Any, headers: dict[str, Any], properties: dict[str, Any], exchange: str, key: str
    ) -> str:
        content_type, encoding, payload = dumps(body, serializer="json")  # type: ignore[no-untyped-call]
        message = channel.prepare_message(payload, 0, content_type, encoding, headers, properties)
        channel._inplace_augment_message(message, exchange, key)
        return json.dumps(message)

    def _kombu_channel(self) -> Any:
        """kombu's channel on the broker, for its message format; it sends nothing here."""
        with self._lock:
            if self._channel is None:
                self._channel = self._app.connection_for_write().default_channel
            return self._channel
