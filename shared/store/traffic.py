"""Model traffic in Redis: the admission of each model call within its model's limits, counted together by
every worker (one script), the settling of a call, and each model's figures."""

from __future__ import annotations

from typing import Any

from redis import Redis

from clawbus.shared.domain.traffic import CLASSES, Admission, Ask, CallEnd, CallLimits, ModelTraffic
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.store.scripts import ScriptCall, Scripts


class TrafficStore:
    def __init__(self, client: Redis, keys: RedisKeys, scripts: Scripts) -> None:
        self._redis = client
        self._keys = keys
        self._scripts = scripts

    def admit(
        self,
        model: str,
        waiter: str,
        *,
        klass: int,
        flow: str,
        weight: int,
        limits: CallLimits,
        tokens: int,
        hold_ms: int,
        grace_ms: int,
    ) -> Admission:
        ask = Ask(model, waiter, klass, flow, weight, limits, tokens, hold_ms, grace_ms)
        script, keys, args = self.admit_call(ask)
        return admission(script(keys=keys, args=args))

    def admit_call(self, ask: Ask, ticket: str = "") -> ScriptCall:
        """The admission script's call for ``ask``; ``ticket``: the call's name if admitted ('': one the
        script numbers)."""
        limits = ask.limits
        keys = [*self._keys.traffic(ask.model), self._keys.traffic_models()]
        args = [
            ask.waiter,
            ask.klass,
            ask.flow,
            ask.weight,
            limits.requests_per_minute,
            limits.tokens_per_minute,
            limits.concurrent,
            ask.tokens,
            ask.hold_ms,
            ask.grace_ms,
            ask.model,
            self._keys.run_prefix(),
            ticket,
        ]
        return self._scripts.admit_call, keys, args

    def in_flight(self, model: str) -> str:
        """The key of ``model``'s calls in flight (a reservation sent beside an admission checks it)."""
        return self._keys.traffic(model)[2]

    def settle(
        self,
        model: str,
        ticket: str,
        *,
        tokens_used: int | None,
        cooldown_ms: int = 0,
        learned: CallLimits = CallLimits(),
        rate_limited: bool = False,
        tokens_in: int = 0,
        tokens_out: int = 0,
        unsent: bool = False,
        limits: CallLimits = CallLimits(),
    ) -> None:
        end = CallEnd(tokens_used, cooldown_ms, learned, rate_limited, tokens_in, tokens_out, unsent, limits)
        script, keys, args = self.settle_call(model, ticket, end)
        script(keys=keys, args=args)

    def settle_call(self, model: str, ticket: str, end: CallEnd) -> ScriptCall:
        return (
            self._scripts.settle_call,
            self._keys.traffic(model),
            [
                ticket,
                -1 if end.tokens_used is None else end.tokens_used,
                end.cooldown_ms,
                end.learned.requests_per_minute,
                end.learned.tokens_per_minute,
                "1" if end.rate_limited else "0",
                end.tokens_in,
                end.tokens_out,
                "1" if end.unsent else "0",
                end.limits.requests_per_minute,
                end.limits.tokens_per_minute,
            ],
        )

    def leave(self, model: str, waiter: str) -> None:
        """``waiter`` stops waiting (its run ended or failed while it waited)."""
        keys = self._keys.traffic(model)
        pipe = self._redis.pipeline(transaction=False)
        pipe.zrem(keys[4], waiter)
        pipe.zrem(keys[5], waiter)
        pipe.hdel(keys[6], waiter)
        pipe.execute()

    def models(self) -> list[str]:
        return sorted(self._redis.smembers(self._keys.traffic_models()))

    def snapshot(self, models: list[str]) -> list[ModelTraffic]:
        """Each model's traffic now; one round trip. Counts in the window include calls that started up to
        a minute ago and have not been trimmed by an admission since."""
        pipe = self._redis.pipeline(transaction=False)
        for model in models:
            window, _tokens, inflight, cooldown, queue, *_rest, state = self._keys.traffic(model)
            pipe.zcard(window)
            pipe.zcard(inflight)
            pipe.pttl(cooldown)
            pipe.zcard(queue)
            pipe.hgetall(state)
        replies = pipe.execute()
        out = []
        for index, model in enumerate(models):
            started, flying, ttl, waiting, state = replies[index * 5 : index * 5 + 5]
            out.append(_traffic(model, int(started), int(flying), int(ttl), int(waiting), state))
        return out


def admission(answer: list[Any]) -> Admission:
    """The admission script's answer: ``{'ok', ticket, waited ms}`` or ``{'wait', ms, reason, position}``."""
    if answer[0] == "ok":
        return Admission(ticket=str(answer[1]), waited_ms=int(answer[2]))
    return Admission(ticket=None, wait_ms=int(answer[1]), reason=answer[2], position=int(answer[3]))


def _traffic(
    model: str, started: int, flying: int, ttl: int, waiting: int, state: dict[str, str]
) -> ModelTraffic:
    figures = ModelTraffic(
        model=model,
        requests_in_window=started,
        in_flight=flying,
        waiting=waiting,
        cooldown_ms=max(ttl, 0),
        tokens_in_window=max(int(state.get("windowTokens", 0)), 0),
        learned_requests_per_minute=int(state["learnedRpm"]) if "learnedRpm" in state else None,
        learned_tokens_per_minute=int(state["learnedTpm"]) if "learnedTpm" in state else None,
        rate_limited=int(state.get("rateLimited", 0)),
        cooldowns=int(state.get("cooldowns", 0)),
        cooldown_ms_total=int(state.get("cooldownMs", 0)),
        tokens_in=int(state.get("tokensIn", 0)),
        tokens_out=int(state.get("tokensOut", 0)),
        holds_lapsed=int(state.get("holdsLapsed", 0)),
        asks=int(state.get("asks", 0)),
    )
    for index, name in enumerate(CLASSES):
        figures.admitted[name] = int(state.get(f"admitted|{index}", 0))
        figures.throttled[name] = int(state.get(f"throttled|{index}", 0))
        figures.waited_ms[name] = int(state.get(f"waitedMs|{index}", 0))
        prefix = f"wait|{index}|"
        figures.wait_buckets[name] = {
            field.removeprefix(prefix): int(count)
            for field, count in state.items()
            if field.startswith(prefix)
        }
    return figures
