"""workers/celery_app.py: the reliability settings of docs/architecture.md.md, and bounded retries on every task."""

from __future__ import annotations

from celery import Celery

from clawbus.shared.config import Config
from clawbus.workers import broker, queues
from clawbus.workers.celery_app import SOFT_SHUTDOWN_SECONDS, VISIBILITY_TIMEOUT_SECONDS, create_app


def app() -> Celery:
    return create_app(Config(), include=["clawbus.workers.tasks"])


def test_tasks_are_acknowledged_late_one_at_a_time_and_retried_when_their_worker_is_lost() -> None:
    conf = app().conf
    assert conf.task_acks_late is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_retry_on_worker_lost is True
    assert conf.task_reject_on_worker_lost is False
    assert conf.worker_cancel_long_running_tasks_on_connection_loss is True
    assert conf.worker_soft_shutdown_timeout == SOFT_SHUTDOWN_SECONDS > 0


def test_events_are_on_for_flower() -> None:
    conf = app().conf
    assert conf.worker_send_task_events is True
    assert conf.task_send_sent_event is True
    assert conf.task_track_started is True


def test_the_worker_consumer_publishes_task_events_in_batches() -> None:
    assert app().conf.worker_consumer == "clawbus.workers.consumer:Consumer"


def test_the_broker_is_the_redis_transport_with_one_publishing_client_per_channel() -> None:
    conf = app().conf
    assert conf.broker_transport == broker.TRANSPORT
    assert conf.broker_transport_options["visibility_timeout"] == VISIBILITY_TIMEOUT_SECONDS


def test_every_queue_is_declared_and_runs_is_the_default() -> None:
    conf = app().conf
    assert [queue.name for queue in conf.task_queues] == list(queues.ALL)
    assert conf.task_default_queue == queues.RUNS


def test_every_clawbus_task_has_a_bounded_number_of_retries() -> None:
    celery = app()
    celery.loader.import_default_modules()
    ours = {name: task for name, task in celery.tasks.items() if name.startswith("clawbus.")}
    assert set(ours) >= {queues.RUN_TASK, *queues.STEP_TASKS.values()}
    for name, task in ours.items():
        assert task.max_retries is not None, name


def test_under_sentinel_broker_and_backend_follow_the_master_the_sentinels_name() -> None:
    config = Config.model_validate({"redis": {"sentinel": {"hosts": ["10.0.0.1:26379"], "master": "prod"}}})
    celery = create_app(config)
    conf = celery.conf
    assert conf.broker_transport == broker.SENTINEL_TRANSPORT
    assert conf.broker_url == conf.result_backend == "sentinel://10.0.0.1:26379/0"
    for options in (conf.broker_transport_options, conf.result_backend_transport_options):
        assert options["master_name"] == "prod"
        assert options["visibility_timeout"] == VISIBILITY_TIMEOUT_SECONDS
    assert type(celery.backend).__name__ == "SentinelBackend"
