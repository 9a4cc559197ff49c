"""OpenClaw's OpenAI-compatible endpoints on the real stack (redis-server, Celery workers, beat, the API as
processes), called through the official ``openai`` SDK: every answer is a run the worker fleet ran, the
token cap and sampling a client sends reach the model (a fake OpenAI server), a worker killed mid-run does
not lose an accepted request, more requests than a worker's concurrency all get their replies, and a client
that leaves cancels its run, as the release's does, unless it asked to keep it."""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from clawbus_client import Client

from clawbus.shared.store.keys import RedisKeys
from tests.support.fake_openai import FakeOpenAI, fake_openai
from tests.support.processes import (
    RedisServer,
    Role,
    role_env,
    start_api,
    start_beat,
    start_worker,
    wait_for,
    write_config,
)
from tests.support.stack import STACK_CONFIG, TOKEN, Fresh

ENABLED = {
    "gateway": {"http": {"endpoints": {"chatCompletions": {"enabled": True}, "responses": {"enabled": True}}}}
}
KEEP = {"x-clawbus-cancel-on-disconnect": "false"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path_factory.mktemp("openai-compat-redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAI]:
    """The model of the agent ``modelled``: an OpenAI-compatible server recording what it is asked."""
    with fake_openai() as fake:
        yield fake


def with_modelled_agent(fake: FakeOpenAI) -> dict[str, Any]:
    """The stack's configuration, endpoints on, with an agent whose model is ``fake``."""
    config = copy.deepcopy({**STACK_CONFIG, **ENABLED})
    config["agents"]["list"].append({"id": "modelled", "model": "fake/gpt"})
    config["models"]["providers"]["fake"] = {"type": "openai", "baseUrl": fake.url, "models": ["gpt"]}
    return config


@pytest.fixture(scope="module")
def api_url(
    tmp_path_factory: pytest.TempPathFactory, server: RedisServer, model: FakeOpenAI
) -> Iterator[str]:
    """A stack of this module's own: the shared one has the endpoints off, as the release's default."""
    root: Path = tmp_path_factory.mktemp("openai-compat")
    env = role_env(server.url, write_config(root, with_modelled_agent(model)), root / "home", TOKEN)
    roles: list[Role] = []
    try:
        roles.append(start_worker(env, root))
        roles.append(start_beat(env, root, root / "home"))
        api, url = start_api(env, root)
        roles.append(api)
        yield url
    finally:
        for role in reversed(roles):
            role.stop()


def sdk(url: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0, timeout=60, **options)


def session(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def run_of(answer_id: str) -> str:
    return answer_id.split("_", 1)[1]


def history(client: Client, key: str) -> list[tuple[str, str]]:
    result = client.sessions_history(key)
    messages = result.messages  # type: ignore[union-attr]
    return [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in messages
    ]


def runs_of(server: RedisServer, key: str) -> list[str]:
    """The runs accepted into the session, oldest first."""
    redis = server.client()
    try:
        return [fields["runId"] for _, fields in redis.xrange(RedisKeys().session_runs(key))]
    finally:
        redis.close()


def running(client: Client, key: str) -> bool:
    try:
        return client.session_status(key).runs_running > 0
    except Exception:  # not accepted yet: the session does not exist
        return False


# --- through the SDK ----------------------------------------------------------------------------------------


def test_the_sdk_lists_the_agents_as_models(api_url: str) -> None:
    ids = [model.id for model in sdk(api_url).models.list()]
    assert ids[:3] == ["openclaw", "openclaw/default", "openclaw/main"]
    assert "openclaw/slow" in ids
    assert sdk(api_url).models.retrieve("openclaw/research").id == "openclaw/research"
    with pytest.raises(openai.NotFoundError) as missing:
        sdk(api_url).models.retrieve("openclaw/nope")
    assert missing.value.body == {
        "message": "Model 'openclaw/nope' not found.",
        "type": "invalid_request_error",
    }


def test_a_chat_completion_through_the_sdk_is_the_workers_reply(api_url: str) -> None:
    user = session("alice")
    completion = sdk(api_url).chat.completions.create(
        model="openclaw", user=user, messages=[{"role": "user", "content": "hello fleet"}]
    )
    assert completion.choices[0].message.content == "echo: hello fleet"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0
    with Client(api_url, TOKEN) as client:
        assert client.get_run(run_of(completion.id)).status == "ok"
        assert history(client, f"agent:main:openai-user:{user}") == [
            ("user", "hello fleet"),
            ("assistant", "echo: hello fleet"),
        ]


def test_a_streamed_chat_completion_through_the_sdk(api_url: str) -> None:
    chunks = list(
        sdk(api_url).chat.completions.create(
            model="openclaw/research",
            messages=[{"role": "user", "content": "stream it"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: stream it"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None


def test_a_response_through_the_sdk(api_url: str) -> None:
    response = sdk(api_url).responses.create(model="openclaw", input="respond please", user=session("carol"))
    assert response.status == "completed"
    assert response.output_text == "echo: respond please"
    follow_up = sdk(api_url).responses.create(
        model="openclaw", input="again", previous_response_id=response.id
    )
    with Client(api_url, TOKEN) as client:
        assert (
            client.get_run(run_of(follow_up.id)).session_key
            == client.get_run(run_of(response.id)).session_key
        )


def test_a_streamed_response_through_the_sdk(api_url: str) -> None:
    with sdk(api_url).responses.stream(model="openclaw", input="stream a response") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert final.output_text == "echo: stream a response"


def test_a_bad_request_is_the_sdks_bad_request_error(api_url: str) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        sdk(api_url).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert refused.value.body == {
        "message": "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`.",
        "type": "invalid_request_error",
    }


# --- what the client asks of the model ---------------------------------------------------------------------


def asked_of_model(model: FakeOpenAI, said: str) -> dict[str, Any]:
    """The request the model got for the run whose user message was ``said``."""
    return next(body for body in model.bodies("gpt") if body["messages"][-1]["content"] == said)


def test_a_chat_completions_cap_and_sampling_reach_the_model(api_url: str, model: FakeOpenAI) -> None:
    said = f"sample me {uuid.uuid4().hex[:6]}"
    completion = sdk(api_url).chat.completions.create(
        model="openclaw/modelled",
        messages=[{"role": "user", "content": said}],
        max_tokens=999,
        max_completion_tokens=77,
        temperature=0.3,
        top_p=0.8,
        frequency_penalty=0.4,
        presence_penalty=-0.2,
        seed=11,
        stop="STOP",
        response_format={"type": "json_object"},
    )
    assert completion.choices[0].message.content == "ok"
    asked = asked_of_model(model, said)
    # max_completion_tokens wins over the older max_tokens, as in the release.
    assert {k: asked[k] for k in ("max_tokens", "temperature", "top_p", "seed", "stop")} == {
        "max_tokens": 77,
        "temperature": 0.3,
        "top_p": 0.8,
        "seed": 11,
        "stop": ["STOP"],
    }
    assert (asked["frequency_penalty"], asked["presence_penalty"]) == (0.4, -0.2)
    assert asked["response_format"] == {"type": "json_object"}


def test_a_streamed_responses_cap_and_sampling_reach_the_model(api_url: str, model: FakeOpenAI) -> None:
    said = f"sample a response {uuid.uuid4().hex[:6]}"
    with sdk(api_url).responses.stream(
        model="openclaw/modelled", input=said, max_output_tokens=55, temperature=1.5, top_p=0.25
    ) as stream:
        assert stream.get_final_response().output_text == "ok"
    asked = asked_of_model(model, said)
    assert (asked["max_tokens"], asked["temperature"], asked["top_p"]) == (55, 1.5, 0.25)


def test_a_request_that_asks_nothing_leaves_the_model_its_defaults(api_url: str, model: FakeOpenAI) -> None:
    said = f"no sampling {uuid.uuid4().hex[:6]}"
    sdk(api_url).chat.completions.create(
        model="openclaw/modelled", messages=[{"role": "user", "content": said}]
    )
    assert {"max_tokens", "temperature", "top_p", "stop", "seed"}.isdisjoint(asked_of_model(model, said))


# --- a client that leaves -----------------------------------------------------------------------------------


def first_chunk_id(url: str, key: str, headers: dict[str, str]) -> str:
    """Open a streamed chat completion with the slow agent, read its first chunk, and hang up."""
    body = {
        "model": "openclaw/slow",
        "stream": True,
        "messages": [{"role": "user", "content": "leave early"}],
    }
    sent = {"Authorization": f"Bearer {TOKEN}", "x-openclaw-session-key": key, **headers}
    with (
        httpx.Client(timeout=30) as http,
        http.stream("POST", f"{url}/v1/chat/completions", json=body, headers=sent) as answer,
    ):
        for line in answer.iter_lines():
            if line.startswith("data: "):
                chunk_id: str = json.loads(line[6:])["id"]
                return chunk_id
    raise AssertionError("no chunk came")


def test_a_client_that_leaves_a_stream_cancels_its_run(api_url: str) -> None:
    run_id = run_of(first_chunk_id(api_url, session("go"), {}))
    with Client(api_url, TOKEN) as client:
        run = client.wait_run(run_id, timeout=30)
        assert run is not None
        assert run.status == "aborted"


def test_a_client_that_asked_to_keep_its_run_leaves_the_stream_and_the_run_goes_on(api_url: str) -> None:
    run_id = run_of(first_chunk_id(api_url, session("stay"), KEEP))
    with Client(api_url, TOKEN) as client:
        run = client.wait_run(run_id, timeout=30)
        assert run is not None
        assert (run.status, run.reply) == ("ok", "echo: leave early")


def hang_up_waiting(url: str, key: str, headers: dict[str, str]) -> None:
    """A non-streamed chat completion with the slow agent whose client gives up after a second."""
    body = {"model": "openclaw/slow", "messages": [{"role": "user", "content": "hang up"}]}
    sent = {"Authorization": f"Bearer {TOKEN}", "x-openclaw-session-key": key, **headers}
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=httpx.Timeout(30, read=1)) as http:
        http.post(f"{url}/v1/chat/completions", json=body, headers=sent)


@pytest.mark.parametrize(("headers", "status"), [({}, "aborted"), (KEEP, "ok")])
def test_a_client_that_leaves_a_waiting_request_cancels_its_run_unless_it_asked_to_keep_it(
    api_url: str, server: RedisServer, headers: dict[str, str], status: str
) -> None:
    key = session("waiting")
    hang_up_waiting(api_url, key, headers)
    with Client(api_url, TOKEN) as client:
        (run_id,) = runs_of(server, f"agent:slow:{key}")
        run = client.wait_run(run_id, timeout=30)
        assert run is not None
        assert run.status == status


# --- the fleet ----------------------------------------------------------------------------------------------


def test_requests_accepted_before_a_worker_dies_are_answered_by_another(fresh: Fresh) -> None:
    fresh.start_redis(config=ENABLED)
    doomed = fresh.worker(concurrency=2)
    fresh.beat()
    _, url = fresh.api()
    answers: dict[str, Any] = {}

    def ask() -> None:
        answers["chat"] = sdk(url).chat.completions.create(
            model="openclaw/slow",
            messages=[{"role": "user", "content": "survive a crash"}],
            extra_headers={"x-openclaw-session-key": "crash-chat"},
        )

    def stream() -> None:
        events = sdk(url).responses.create(
            model="openclaw/slow",
            input="stream through a crash",
            stream=True,
            extra_headers={"x-openclaw-session-key": "crash-stream"},
        )
        answers["stream"] = list(events)

    threads = [threading.Thread(target=ask), threading.Thread(target=stream)]
    for thread in threads:
        thread.start()
    with Client(url, TOKEN) as client:
        both = ("agent:slow:crash-chat", "agent:slow:crash-stream")
        wait_for(lambda: all(running(client, key) for key in both), 30, what="both runs to be running")
        doomed.kill()  # SIGKILL: the runs' messages stay unacknowledged, their leases lapse
        fresh.worker()
        for thread in threads:
            thread.join(60)
            assert not thread.is_alive()
        chat = answers["chat"]
        assert chat.choices[0].message.content == "echo: survive a crash"
        assert client.get_run(run_of(chat.id)).attempts == 2
        completed = answers["stream"][-1]
        assert completed.type == "response.completed"
        assert completed.response.output[0].content[0].text == "echo: stream through a crash"
        assert client.get_run(run_of(completed.response.id)).attempts == 2


def test_more_requests_than_the_workers_concurrency_all_get_their_replies(fresh: Fresh) -> None:
    fresh.start_redis(config=ENABLED)
    fresh.worker(concurrency=2)
    _, url = fresh.api()

    def ask(i: int) -> str:
        if i % 2:
            chunks = sdk(url).chat.completions.create(
                model="openclaw/brisk",
                user=f"many-{i}",
                stream=True,
                messages=[{"role": "user", "content": f"n{i}"}],
            )
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        answer = sdk(url).chat.completions.create(
            model="openclaw/brisk", user=f"many-{i}", messages=[{"role": "user", "content": f"n{i}"}]
        )
        return answer.choices[0].message.content or ""

    with ThreadPoolExecutor(max_workers=10) as pool:
        replies = list(pool.map(ask, range(10)))
    assert replies == [f"echo: n{i}" for i in range(10)]


def test_clients_that_leave_while_their_runs_wait_behind_slow_runs_cancel_them(fresh: Fresh) -> None:
    """Under load: one worker slot, three slow runs ahead. Two clients leave while their runs still wait in
    the queue, one waiting for a whole answer, one streaming; their runs end ``aborted`` without ever
    running, and the runs ahead of them answer their clients as usual."""
    redis_server = fresh.start_redis(config=ENABLED)
    fresh.worker(concurrency=1)
    _, url = fresh.api()

    def ask(i: int) -> str:
        answer = sdk(url).chat.completions.create(
            model="openclaw/slow",
            messages=[{"role": "user", "content": f"ahead {i}"}],
            extra_headers={"x-openclaw-session-key": f"ahead-{i}"},
        )
        return answer.choices[0].message.content or ""

    with ThreadPoolExecutor(max_workers=3) as pool, Client(url, TOKEN) as client:
        ahead = [pool.submit(ask, i) for i in range(3)]
        ahead_keys = [f"agent:slow:ahead-{i}" for i in range(3)]
        wait_for(lambda: any(running(client, key) for key in ahead_keys), 30, what="a run ahead to run")
        hang_up_waiting(url, "left-waiting", {})
        streamed = run_of(first_chunk_id(url, "left-streaming", {}))
        (waited,) = runs_of(redis_server, "agent:slow:left-waiting")
        for run_id in (waited, streamed):
            run = client.wait_run(run_id, timeout=30)
            assert run is not None
            assert (run.status, run.started_at) == ("aborted", None)
        assert sorted(future.result(timeout=60) for future in ahead) == [f"echo: ahead {i}" for i in range(3)]
