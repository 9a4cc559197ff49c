"""The gate every model call of a run passes: its model's limits across the fleet, then its agent's and its
tree's budgets (docs/architecture.md, "Model traffic" and "Budgets").

A call reserves its worst case (its prompt estimate plus its output cap, at the model's price) before it
starts and settles with what the provider reports after; both its holds lapse if its worker dies. Waiting
for capacity happens here: a short wait in the worker's thread, a long one parks the run
(``AwaitingCapacity``) so its slot serves other work until its turn. A 429 (or a 503 with
``Retry-After``) sets one cooldown every worker obeys.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from opentelemetry import trace

from clawbus.shared.base import session_keys
from clawbus.shared.base.errors import ClawbusError
from clawbus.shared.config import Config, OpenAIModel, OpenAIProvider
from clawbus.shared.domain import budgets
from clawbus.shared.domain.runs import Memo
from clawbus.shared.domain.traffic import (
    CLASS_OF_KIND,
    CLASSES,
    Admission,
    Ask,
    CallClose,
    CallEnd,
    CallLimits,
)
from clawbus.shared.ports.runtime import CallTicket, RunCancelled, RunTimedOut
from clawbus.shared.ports.storage import Storage
from clawbus.shared.ports.storage.sessions import Sessions
from clawbus.shared.runner.leases import LeaseLost
from clawbus.shared.wire.models import Run, SessionEntry, Usage

log = logging.getLogger(__name__)

# What a call reserves as its output when its model names no maxTokens (and what it then asks for, when a
# budget or a token limit is configured, so the reservation is a bound).
DEFAULT_OUTPUT_CAP = 4096
# A call in flight holds its place this long past its request timeout: a worker that died holding it gives
# it back then.
HOLD_MARGIN_MS = 30_000
# A waiter keeps its place this long past the wait it was told.
GRACE_MS = 15_000
WAITING_FOR = "model capacity"
# A prompt's tokens, estimated from its JSON: about four characters a token.
CHARS_PER_TOKEN = 4


class AwaitingCapacity(ClawbusError):
    """The call would wait ``wait_s`` for capacity: the run parks and is dispatched again then."""

    def __init__(self, wait_s: float, reason: str) -> None:
        super().__init__(f"waiting {wait_s:.1f} s for model capacity ({reason})")
        self.wait_s = wait_s
        self.reason = reason


class NoCapacity(ClawbusError, RuntimeError):
    """A run without a time limit waited ``models.admission.maxWaitSeconds`` for capacity."""


class ModelGate:
    """The gate of one run's model calls (a run makes one at a time: the run is its waiter)."""

    def __init__(
        self,
        store: Storage,
        config: Config,
        run: Run,
        model_ref: str,
        *,
        root: str | None,
        cancel: threading.Event | None,
        time_left: Callable[[], float | None],
    ) -> None:
        provider_name, _, model_id = model_ref.partition("/")
        provider = config.models.all_providers()[provider_name]
        assert isinstance(provider, OpenAIProvider)
        self._store, self._config, self._run = store, config, run
        self._ref = model_ref
        self._provider: OpenAIProvider = provider
        self._model: OpenAIModel = provider.model(model_id)
        configured = provider.limits_of(model_id)
        self._limits = CallLimits(
            configured.requests_per_minute or 0, configured.tokens_per_minute or 0, configured.concurrent or 0
        )
        self._budget = budgets.configured(config, run.agent_id)
        # The tree a sub-agent's calls count in; the fair share is per agent and root session.
        self._root = root if session_keys.is_subagent(run.session_key) else None
        # The chain a call counts in, where chains are limited (a run outside any chain is its own).
        self._chain = (run.chain_id or run.run_id) if self._budget.chained else None
        self._flow = f"{run.agent_id}|{root or run.session_key}"
        agent = config.agent(run.agent_id)
        self._weight = agent.priority if agent is not None else 1
        self._class = CLASS_OF_KIND.get(run.kind, 2)
        self._cancel = cancel
        self._time_left = time_left
        # How long a call's holds (its place in flight, its budget reservation) outlive a dead worker.
        self._hold_ms = int(provider.timeout_seconds * 1000) + HOLD_MARGIN_MS
        # Since when this run's current call has been kept from its model (its waits and 429s together).
        self._held_since: float | None = None
        # The answered call's settling, not sent yet (``take_close``).
        self._closing: CallClose | None = None
        # The loop state to memoize with the next call's admission (``memoize_with_next``).
        self._memo: Callable[[], Memo] | None = None

    def output_cap(self) -> int | None:
        """The output cap a call asks for: the model's; else, where a budget or a token limit is configured,
        the default one its reservation assumes (so the reservation is a bound); else none."""
        if self._model.max_tokens is not None:
            return self._model.max_tokens
        bounded = self._budget.any or self._limits.tokens_per_minute
        return DEFAULT_OUTPUT_CAP if bounded else None

    def admit(self, body: Mapping[str, Any]) -> CallTicket:
        """Wait for the model's capacity (in this thread while the wait is short, else
        ``AwaitingCapacity``: the run keeps its place in the queue), then reserve the call's worst case
        against the budgets: ``BudgetExceeded`` if it would pass one (the call leaves the window unsent).
        Each ask is one round trip: the admission and the reservation go together."""
        if self._memo is None:  # else the memo's round trip carries it
            self.flush()  # a settling left waiting never outlives the next call
        prompt = len(orjson.dumps(body.get("messages", []))) // CHARS_PER_TOKEN + 1
        cap = self.output_cap() or DEFAULT_OUTPUT_CAP
        tokens = prompt + cap
        usd_micros = budgets.micros(self._model.cost_usd(prompt, cap) or 0.0)
        traffic, refusal = self._wait_for_capacity(tokens, usd_micros)
        if refusal is not None:
            self._close_unsent(traffic)
            raise budgets.BudgetExceeded(refusal)
        return CallTicket(traffic, usd_micros, tokens)

    def _wait_for_capacity(self, tokens: int, usd_micros: int) -> tuple[str, budgets.Refusal | None]:
        admission = self._config.models.admission
        if self._held_since is None:
            self._held_since = time.monotonic()
        started = self._held_since
        announced = False
        parked = False
        ask = Ask(
            self._ref,
            self._run.run_id,
            klass=self._class,
            flow=self._flow,
            weight=self._weight,
            limits=self._limits,
            tokens=tokens,
            hold_ms=self._hold_ms,
            grace_ms=GRACE_MS,
        )
        try:
            while True:
                if self._cancel is not None and self._cancel.is_set():
                    raise RunCancelled()
                now_ms = self._store.clock.now_ms()
                reservation = budgets.Reservation(
                    self._run.agent_id,
                    budgets.day_of(now_ms),
                    self._root,
                    self._budget,
                    usd_micros=usd_micros,
                    tokens=tokens,
                    now_ms=now_ms,
                    hold_ms=self._hold_ms,
                    chain=self._chain,
                )
                answer, refusal = self._ask(ask, reservation)
                if answer.ticket is not None:
                    if announced or self._run.waiting_for:
                        self._store.runs.mark_waiting(self._run.run_id, None)
                    return answer.ticket, refusal
                wait_s = answer.wait_ms / 1000
                left = self._time_left()
                if left is None:
                    left = admission.max_wait_seconds - (time.monotonic() - started)
                    if left <= 0:
                        raise NoCapacity(
                            f"no capacity of {self._ref} within models.admission.maxWaitSeconds "
                            f"({admission.max_wait_seconds:g} s; {answer.reason})"
                        )
                elif left <= 0:
                    raise RunTimedOut(f"waiting for capacity of {self._ref} ({answer.reason})")
                if not announced:
                    announced = True
                    self._announce(answer.reason or "", answer.wait_ms, answer.position)
                if wait_s > admission.park_after_seconds and wait_s < left:
                    parked = True
                    raise AwaitingCapacity(wait_s, answer.reason or "")
                pause = min(wait_s, left, admission.park_after_seconds or wait_s)
                if self._cancel is not None and self._cancel.wait(pause):
                    raise RunCancelled()
                if self._cancel is None:
                    time.sleep(pause)
        except BaseException:
            if not parked:
                self._store.traffic.leave(self._ref, self._run.run_id)
                if announced:
                    self._store.runs.mark_waiting(self._run.run_id, None)
            raise

    def memoize_with_next(self, memo: Callable[[], Memo]) -> None:
        """The loop state ``memo`` makes goes to Redis with the next call's admission, in its round trip,
        after the tool calls between the two ran (the caller's to say that is safe: they only read)."""
        self._memo = memo

    def _ask(self, ask: Ask, reservation: budgets.Reservation) -> tuple[Admission, budgets.Refusal | None]:
        memo, self._memo = self._memo, None
        if memo is None:
            return self._store.calls.open(ask, reservation)
        kept, answer, refusal = self._store.calls.memoize_and_open(
            memo(), self.take_close(), ask, reservation
        )
        if not kept:
            if answer.ticket is not None:  # admitted for an attempt that no longer owns the run
                self._close_unsent(answer.ticket)
            raise LeaseLost(f"run {self._run.run_id}: lease lost mid-loop")
        return answer, refusal

    def _announce(self, reason: str, wait_ms: int, position: int) -> None:
        """The run's events say it is throttled, and why; the run says what it waits for."""
        log.info(
            "run %s: %s throttled (%s), about %d ms, %d ahead",
            self._run.run_id,
            self._ref,
            reason,
            wait_ms,
            position,
        )
        self._store.runs.add_event(
            self._run.run_id,
            {
                "type": "throttled",
                "model": self._ref,
                "reason": reason,
                "waitMs": str(wait_ms),
                "position": str(position),
                "class": CLASSES[self._class],
            },
        )
        self._store.runs.mark_waiting(self._run.run_id, WAITING_FOR)
        trace.get_current_span().add_event(
            "throttled", {"clawbus.model": self._ref, "clawbus.reason": reason, "clawbus.wait_ms": wait_ms}
        )

    def settle(self, ticket: CallTicket, usage: Usage | None, headers: Mapping[str, str]) -> None:
        """The call is over (``usage`` None: it failed, and what it reserved stands for its tokens). A failed
        call is settled at once (a retry asks again); an answered one waits for the step's end
        (``take_close``: it goes with the run's memo, one round trip) or for ``flush``."""
        self._held_since = None
        used = None
        if usage is not None and usage.input_tokens is not None and usage.output_tokens is not None:
            used = usage.input_tokens + usage.output_tokens
        learned, cooldown_ms = learn(headers, self._limits)
        end = CallEnd(
            used,
            cooldown_ms=cooldown_ms,
            learned=learned,
            tokens_in=(usage.input_tokens or 0) if usage else 0,
            tokens_out=(usage.output_tokens or 0) if usage else 0,
            limits=self._limits,
        )
        if usage is None or used is None:  # what it used is not known: its reservation stands
            charge = self._charge(ticket.usd_micros, ticket.tokens)
        else:
            charge = self._charge(budgets.micros(usage.cost_usd or 0.0), used)
        closing = CallClose(self._ref, ticket.traffic, end, charge)
        if usage is None:
            self._store.calls.close(closing)
        else:
            self._closing = closing

    def take_close(self) -> CallClose | None:
        """The answered call's settling, for the caller to send (with the run's memo); None if none waits."""
        closing, self._closing = self._closing, None
        return closing

    def flush(self) -> None:
        """Send the answered call's settling if it still waits."""
        closing = self.take_close()
        if closing is not None:
            self._store.calls.close(closing)

    def rate_limited(self, ticket: CallTicket, headers: Mapping[str, str], backoff_s: float) -> None:
        """The provider refused the call for its rate limit: every worker holds off its model until the
        cooldown ends (``Retry-After``, else the reset headers, else ``backoff_s``); nothing was spent."""
        learned, reset_ms = learn(headers, self._limits)
        after = retry_after_ms(headers)
        cooldown_ms = after if after is not None else (reset_ms or int(backoff_s * 1000))
        log.warning("%s answered 429: every worker holds off it for %d ms", self._ref, cooldown_ms)
        self._held_since = self._held_since or time.monotonic()
        end = CallEnd(
            0, cooldown_ms=max(cooldown_ms, 1), learned=learned, rate_limited=True, limits=self._limits
        )
        self._store.calls.close(CallClose(self._ref, ticket.traffic, end, self._charge(0, 0)))

    def _close_unsent(self, traffic: str) -> None:
        """An admitted call that will not be sent leaves its place in flight and its budget hold, if any."""
        unsent = CallEnd(None, unsent=True, limits=self._limits)
        self._store.calls.close(CallClose(self._ref, traffic, unsent, self._charge(0, 0)))

    def _charge(self, usd_micros: int, tokens: int) -> budgets.Charge:
        day = budgets.day_of(self._store.clock.now_ms())
        return budgets.Charge(self._run.agent_id, day, self._root, usd_micros, tokens, self._chain)


def root_of(sessions: Sessions, session: SessionEntry | None) -> str | None:
    """The root session of a sub-agent's tree (the first session up its spawners that nobody spawned)."""
    seen: set[str] = set()
    while session is not None and session.spawned_by and session.spawned_by not in seen:
        seen.add(session.key)
        parent = sessions.get(session.spawned_by)
        if parent is None:
            return session.spawned_by
        session = parent
    return session.key if session is not None else None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}


def duration_ms(text: str) -> int | None:
    """OpenAI's reset durations (``1s``, ``6m0s``, ``20ms``), or plain seconds."""
    text = text.strip()
    try:
        return int(float(text) * 1000)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(f"{n}{u}" for n, u in parts) != text:
        return None
    return int(sum(float(n) * _UNIT_MS[u] for n, u in parts))


def retry_after_ms(headers: Mapping[str, str]) -> int | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(int(float(value) * 1000), 0)
    except ValueError:
        return None


def learn(headers: Mapping[str, str], configured: CallLimits) -> tuple[CallLimits, int]:
    """What a provider's ``x-ratelimit-*`` headers teach where nothing is configured: its limits per minute,
    and a cooldown until its reset when nothing remains (requests or tokens)."""

    def number(name: str) -> int:
        value = headers.get(name)
        return int(value) if value is not None and value.isdigit() else 0

    learned = CallLimits(
        requests_per_minute=0 if configured.requests_per_minute else number("x-ratelimit-limit-requests"),
        tokens_per_minute=0 if configured.tokens_per_minute else number("x-ratelimit-limit-tokens"),
    )
    cooldown = 0
    for kind in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{kind}")
        reset = headers.get(f"x-ratelimit-reset-{kind}")
        if remaining == "0" and reset is not None:
            cooldown = max(cooldown, duration_ms(reset) or 0)
    return learned, cooldown
