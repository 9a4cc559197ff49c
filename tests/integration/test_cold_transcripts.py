"""Hot and cold transcripts (docs/contract.md §3) on the real stack: redis-server, workers, beat, the API.
The cold part on a local folder and on S3 (moto's server: a real S3 API in this process); workers killed
while their runs commit and their moves write, and every message still read exactly once, in order."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult
from moto.server import ThreadedMotoServer

from clawbus.shared.config import Config
from clawbus.shared.flows.hot_window import slack
from clawbus.shared.store.keys import RedisKeys
from clawbus.shared.tools.history_view import text_of
from tests.support.processes import free_port, wait_for
from tests.support.stack import TOKEN, Fresh

HOT = 10
BUCKET = "clawbus-cold"
KEYS = RedisKeys(Config().redis.prefix)


@pytest.fixture
def s3() -> Iterator[dict[str, str]]:
    """moto's S3 server on a free loopback port, one bucket; the environment a role needs to reach it."""
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    try:
        boto3.client("s3", **_client_args(env)).create_bucket(Bucket=BUCKET)
        yield env
    finally:
        server.stop()


def _client_args(env: dict[str, str]) -> dict[str, Any]:
    return {
        "endpoint_url": env["AWS_ENDPOINT_URL"],
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region_name": env["AWS_DEFAULT_REGION"],
    }


def started(fresh: Fresh, store: str, env: dict[str, str] | None = None, workers: int = 1) -> str:
    fresh.start_redis(
        config={
            "session": {"store": store, "hotMessages": HOT},
            # The whole backlog queues: none of it is dropped as a busy session's overflow (contract §11).
            "messages": {"queue": {"cap": 1000}},
        }
    )
    fresh.env.update(env or {})
    for _ in range(workers):
        fresh.worker(concurrency=4)
    fresh.beat()
    return fresh.api()[1]


def said(api: Client, key: str, limit: int | None = None) -> list[str]:
    history = api.sessions_history(key, limit=limit)
    assert isinstance(history, SessionsHistoryResult), history
    return [text_of(m) for m in history.messages]


def conversation(count: int) -> list[str]:
    return [text for i in range(count) for text in (f"note {i}", f"echo: note {i}")]


def length(fresh: Fresh, key: str) -> int:
    """Messages in the transcript, hot and cold, as Redis counts them."""
    assert fresh.redis_server is not None
    with fresh.redis_server.client() as db:
        return int(db.xlen(KEYS.transcript(key))) + int(db.hget(KEYS.cold(key), "count") or 0)


def hot_length(fresh: Fresh, key: str) -> int:
    assert fresh.redis_server is not None
    with fresh.redis_server.client() as db:
        return int(db.xlen(KEYS.transcript(key)))


def test_a_transcript_three_windows_long_reads_back_whole_from_a_local_folder(
    fresh: Fresh, tmp_path: Path
) -> None:
    url = started(fresh, str(tmp_path / "cold"))
    key = "agent:main:webchat:direct:alice"
    with Client(url, TOKEN) as api:
        for i in range(15):  # 30 messages: three hot windows
            sent = api.post_message(key, f"note {i}", timeout_seconds=30, channel="webchat", to="alice")
            assert isinstance(sent, SendResult)
            assert sent.status == "ok"
        expected = conversation(15)
        assert said(api, key, limit=30) == expected
        assert said(api, key, limit=7) == expected[-7:]
        assert said(api, key) == expected  # the default limit reaches into the cold part too
        session_id = api.get_session(key).session_id
    assert hot_length(fresh, key) <= HOT + 10
    cold = tmp_path / "cold" / "agents" / "main" / "sessions" / f"{session_id}.jsonl"
    lines = [json.loads(line) for line in cold.read_text().splitlines()]
    assert [line["content"][0]["text"] for line in lines] == expected[: len(lines)]
    assert len(lines) >= 30 - HOT - 10


def test_workers_killed_while_runs_commit_and_moves_write_lose_and_double_nothing_on_s3(
    fresh: Fresh, s3: dict[str, str]
) -> None:
    """More messages than the workers take at once, a move every few runs, and a worker SIGKILLed again
    and again: the transcript is every message once, in order, across Redis and the S3 object."""
    url = started(fresh, f"s3://{BUCKET}/cold", env=s3, workers=2)
    key = "agent:main:webchat:direct:bob"
    count = 80
    with Client(url, TOKEN) as api:
        accepted = []
        for i in range(count):
            sent = api.post_message(key, f"note {i}", timeout_seconds=0, channel="webchat", to="bob")
            assert isinstance(sent, SendResult)
            accepted.append(sent.run_id)
        for done in (10, 25, 45, 65):  # runs ended before each kill: kills land all along the backlog
            wait_for(lambda n=done: length(fresh, key) >= 2 * n, 60, what=f"{done} runs ended")
            workers = [r for r in fresh.roles if r.argv[3:4] == ["worker"] and not r.exited()]
            workers[done % len(workers)].kill()
            fresh.worker(concurrency=4)
        for run_id in accepted:
            run = api.wait_run(run_id, timeout=120)
            assert run is not None
            assert run.status == "ok", run
        # A worker killed mid-move leaves its move's lease behind (10 s), and the session's moves wait for
        # it: on a fast machine every run may end before it lapses. One message more after it has: its
        # commit moves what waited, so the S3 object holds the older part.
        wait_for(lambda: not moving(fresh, key), 30, what="a killed mover's lease to lapse")
        last = api.post_message(key, f"note {count}", timeout_seconds=30, channel="webchat", to="bob")
        assert isinstance(last, SendResult)
        assert last.status == "ok"
        expected = conversation(count + 1)
        wait_for(lambda: said(api, key, limit=len(expected)) == expected, 30, what="the whole transcript")
        session_id = api.get_session(key).session_id
    cold = wait_for(
        lambda: cold_object(s3, f"cold/agents/main/sessions/{session_id}.jsonl"), 30, what="the S3 object"
    )
    assert cold is not None
    lines = [json.loads(line)["content"][0]["text"] for line in cold.splitlines()]
    assert lines == expected[: len(lines)]
    # The last move, which may still be writing, leaves the hot part within the window.
    wait_for(lambda: hot_length(fresh, key) <= HOT + slack(HOT), 30, what="the hot part within its window")


def moving(fresh: Fresh, key: str) -> bool:
    """A move of the session holds its lease."""
    assert fresh.redis_server is not None
    with fresh.redis_server.client() as db:
        return bool(db.exists(KEYS.cold_lease(key)))


def cold_object(s3: dict[str, str], path: str) -> str | None:
    """The object's text, None while there is none."""
    try:
        body = boto3.client("s3", **_client_args(s3)).get_object(Bucket=BUCKET, Key=path)["Body"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "NoSuchKey":
            return None
        raise
    text: str = body.read().decode()
    return text


@pytest.fixture(autouse=True)
def _no_aws_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 in this process must not read a developer's own AWS configuration."""
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
