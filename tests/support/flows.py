"""A stored sessions_send flow for unit tests that need one to hang deliveries on."""

from __future__ import annotations

from clawbus.shared.config import Config
from clawbus.shared.domain.chains import Chain
from clawbus.shared.flows.create import new_flow
from clawbus.shared.store import Store
from clawbus.shared.store.codec import encode


def stored_flow(config: Config, store: Store, flow_id: str, target_key: str = "agent:main:main") -> None:
    flow = new_flow(
        config,
        run_id=flow_id,
        requester_key="agent:main:cron:a",
        requester=None,
        target_key=target_key,
        target=None,
        message="m",
        timeout_seconds=0,
        chain=Chain(flow_id, 1, ("agent:main:cron:a", target_key)),
        now=1,
    )
    store.redis.hset(store.keys.flow(flow_id), mapping=encode(flow))
