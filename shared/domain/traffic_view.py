"""The fleet view's model traffic (``GET /v1/status``, the console, ``clawbus status``): per provider and
model, its limits (configured, and those learned from the provider's headers), what is in use, the calls
waiting and the cooldown. Pure: the caller reads the figures from the store."""

from __future__ import annotations

from clawbus.shared.config import Config
from clawbus.shared.config.providers import OpenAIProvider
from clawbus.shared.domain.traffic import ModelTraffic
from clawbus.shared.wire.fleet import ModelTrafficRow, TrafficLimits


def traffic_rows(config: Config, figures: list[ModelTraffic]) -> list[ModelTrafficRow]:
    """A row for every configured model of an OpenAI-compatible provider (the only ones admitted), and
    for any other model with traffic recorded (one a later configuration removed), sorted by model."""
    seen = {figure.model: figure for figure in figures}
    refs = set(seen)
    for name, provider in config.models.all_providers().items():
        if isinstance(provider, OpenAIProvider):
            refs |= {f"{name}/{model.id}" for model in provider.models}
    return [_row(config, ref, seen.get(ref) or ModelTraffic(model=ref)) for ref in sorted(refs)]


def _row(config: Config, ref: str, figure: ModelTraffic) -> ModelTrafficRow:
    provider_name, _, model_id = ref.partition("/")
    provider = config.models.all_providers().get(provider_name)
    limits = TrafficLimits()
    if isinstance(provider, OpenAIProvider) and any(model.id == model_id for model in provider.models):
        configured = provider.limits_of(model_id)
        limits = TrafficLimits(
            requests_per_minute=configured.requests_per_minute,
            tokens_per_minute=configured.tokens_per_minute,
            concurrent=configured.concurrent,
        )
    return ModelTrafficRow(
        model=ref,
        provider=provider_name,
        model_id=model_id,
        limits=limits,
        learned=TrafficLimits(
            requests_per_minute=figure.learned_requests_per_minute,
            tokens_per_minute=figure.learned_tokens_per_minute,
        ),
        requests_in_window=figure.requests_in_window,
        tokens_in_window=figure.tokens_in_window,
        in_flight=figure.in_flight,
        waiting=figure.waiting,
        cooldown_ms=figure.cooldown_ms,
    )
