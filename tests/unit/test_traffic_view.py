"""shared/domain/traffic_view.py: the fleet view has a row for every configured model of an OpenAI-compatible
provider, with its limits (the model's own over its provider's) and its figures, and for any model with
traffic that is no longer configured."""

from __future__ import annotations

from clawbus.shared.domain.traffic import ModelTraffic
from clawbus.shared.domain.traffic_view import traffic_rows
from tests.conftest import make_config

CONFIG = make_config(
    {
        "models": {
            "providers": {
                "fake": {
                    "type": "openai",
                    "baseUrl": "http://127.0.0.1:9/v1",
                    "limits": {"requestsPerMinute": 100, "tokensPerMinute": 9_000},
                    "models": [{"id": "a", "limits": {"requestsPerMinute": 10, "concurrent": 2}}, "b"],
                }
            }
        }
    }
)


def test_every_configured_model_has_a_row_with_its_limits_over_its_providers() -> None:
    rows = {row.model: row for row in traffic_rows(CONFIG, [])}
    assert list(rows) == ["fake/a", "fake/b"]
    assert rows["fake/a"].limits.wire() == {
        "requestsPerMinute": 10,
        "tokensPerMinute": 9_000,
        "concurrent": 2,
    }
    assert rows["fake/b"].limits.wire() == {"requestsPerMinute": 100, "tokensPerMinute": 9_000}
    assert (rows["fake/b"].provider, rows["fake/b"].model_id, rows["fake/b"].in_flight) == ("fake", "b", 0)


def test_a_models_figures_and_learned_limits_are_shown() -> None:
    figure = ModelTraffic(
        model="fake/a",
        requests_in_window=4,
        tokens_in_window=800,
        in_flight=2,
        waiting=3,
        cooldown_ms=1_500,
        learned_requests_per_minute=8,
    )
    [row, _] = traffic_rows(CONFIG, [figure])
    assert (row.requests_in_window, row.tokens_in_window, row.in_flight, row.waiting, row.cooldown_ms) == (
        4,
        800,
        2,
        3,
        1_500,
    )
    assert row.learned.wire() == {"requestsPerMinute": 8}


def test_a_model_no_longer_configured_keeps_its_row_without_limits() -> None:
    rows = {row.model: row for row in traffic_rows(CONFIG, [ModelTraffic(model="gone/x", waiting=1)])}
    assert rows["gone/x"].limits.wire() == {}
    assert rows["gone/x"].waiting == 1
