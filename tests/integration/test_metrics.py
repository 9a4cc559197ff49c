"""``GET /metrics`` after a known workload through real workers: the fleet's counts, exactly."""

from __future__ import annotations

import httpx
from clawbus_client import Client
from clawbus_client.models import SendResult
from prometheus_client.parser import text_string_to_metric_families

from tests.support.exchanges import finished
from tests.support.stack import TOKEN, Fresh


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = httpx.get(f"{url}/metrics")  # no token: scraped like the probes
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_metrics_count_the_runs_deliveries_and_waits_of_a_known_workload(fresh: Fresh) -> None:
    fresh.start_redis(config={"session": {"agentToAgent": {"maxPingPongTurns": 0}}})
    fresh.worker()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        for i in range(3):
            reply = client.post_message(f"agent:main:cron:m{i}", "hi", timeout_seconds=20)
            assert isinstance(reply, SendResult)
            assert reply.status == "ok"
        sent = client.sessions_send(
            "agent:main:main", "status?", timeout_seconds=20, caller="agent:main:cron:m0"
        )
        assert isinstance(sent, SendResult)
        assert sent.flow_id is not None
        assert finished(client, sent.flow_id).delivery_status == "delivered"
    figures = scrape(url)

    def value(name: str, **labels: str) -> float:
        return figures.get((name, tuple(sorted(labels.items()))), 0.0)

    assert value("clawbus_runs_created_total", kind="steer") == 3
    assert value("clawbus_runs_created_total", kind="send") == 1
    assert value("clawbus_runs_created_total", kind="announce") == 1
    assert value("clawbus_runs_finished_total", kind="steer", status="ok") == 3
    assert value("clawbus_runs_finished_total", kind="send", status="ok") == 1
    assert value("clawbus_runs_finished_total", kind="announce", status="ok") == 1
    assert value("clawbus_deliveries_total", status="delivered") == 1
    assert value("clawbus_queue_depth", queue="runs") == 0
    assert value("clawbus_workers_alive") == 1
    assert value("clawbus_active_waits") == 0
    # Four waits answered, each once its run ended.
    assert value("clawbus_wait_seconds_count", outcome="ended") == 4
    assert value("clawbus_wait_seconds_bucket", outcome="ended", le="+Inf") == 4
