"""OpenClaw's OpenAI-compatible endpoints over the in-process app (fakeredis), each run executed on its
own thread as a worker would while the request waits: the release's shapes, texts and statuses
(captures 40-45 and the live gateway's answers), the sessions requests go to, what of ``messages`` and
``input`` becomes the message, and clawbus's own choices (api/routes/openai_compat.py)."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import anyio
import fakeredis
import pytest
from fastapi.testclient import TestClient

from clawbus.api.app import create_app
from clawbus.api.openai_compat.replies import AppendOnlyText, Ended, Reply, follow
from clawbus.api.services import Services
from clawbus.api.waits import RunWaiter
from clawbus.shared.config import Config
from clawbus.shared.domain.runs import Enqueue, LaneHead
from clawbus.shared.flows import run_control
from clawbus.shared.store import Store
from clawbus.shared.store.live import LiveStore
from clawbus.shared.store.server_clock import ServerClock
from clawbus.shared.wire.models import RunStatus, Usage
from clawbus.workers.testing import InlineDispatcher, World, drain_runs, world
from tests.conftest import make_config

TOKEN = "openai-compat-token"
RESEARCH_ONLY = "research-only-token-000"
SECRET = "sk-abcdefghijklmnopqrstuvwx1234"
ENABLED = {"chatCompletions": {"enabled": True}, "responses": {"enabled": True}}
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def config_with(**gateway: Any) -> Config:
    return make_config(
        {
            "gateway": {
                "auth": {
                    "tokens": [
                        TOKEN,
                        {"name": "research", "token": RESEARCH_ONLY, "agents": ["research"]},
                    ]
                },
                "http": {"endpoints": ENABLED},
                **gateway,
            },
            "agents": {
                "list": [
                    {"id": "main", "default": True},
                    {"id": "research"},
                    {"id": "broken", "model": "script/broken"},
                    {"id": "slow", "model": "slowecho/echo"},
                ]
            },
            "models": {
                "providers": {
                    "script": {
                        "type": "script",
                        "models": ["broken"],
                        "rules": [{"match": ".", "error": f"model down {SECRET}"}],
                    },
                    "slowecho": {"type": "echo", "delayMs": 3000},
                }
            },
        }
    )


class BackgroundWorker(InlineDispatcher):
    """Runs each dispatched run at once on its own thread, as a worker would while the API waits."""

    def __init__(self, world: World) -> None:
        super().__init__(world.store.redis)
        self.world = dataclasses.replace(world, dispatcher=self)  # the world's runs dispatched here
        self.threads: list[threading.Thread] = []
        self.dispatched: list[LaneHead] = []

    def render_run(self, head: LaneHead) -> Enqueue | None:
        return None  # every run comes through dispatch_run, which starts its thread

    def dispatch_run(self, head: LaneHead, delay_s: float = 0.0) -> None:
        super().dispatch_run(head, delay_s)
        self.dispatched.append(head)
        thread = threading.Thread(target=drain_runs, args=(self.world,), daemon=True)
        self.threads.append(thread)
        thread.start()

    def stop(self) -> None:
        """Cancel what still runs (a slow run a test stopped waiting for) and wait for every thread."""
        for head in list(self.dispatched):
            run_control.cancel_run(self.world, head.run_id)
        deadline = time.monotonic() + 15
        for thread in self.threads:
            thread.join(max(deadline - time.monotonic(), 0))
            assert not thread.is_alive(), "a run did not end in time"


class App:
    def __init__(self, http: TestClient, store: Store, worker: BackgroundWorker) -> None:
        self.http, self.store, self.worker = http, store, worker

    def chat(self, body: dict[str, Any], **headers: str) -> Any:
        return self.http.post("/v1/chat/completions", json=body, headers=headers)

    def respond(self, body: dict[str, Any], **headers: str) -> Any:
        return self.http.post("/v1/responses", json=body, headers=headers)

    def transcript(self, key: str) -> list[tuple[str, str]]:
        return [(m.role, m.text) for m in self.store.transcripts.last(key, 50)]


@contextmanager
def app_for(config: Config) -> Iterator[App]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    worker = BackgroundWorker(world(config, clock=ServerClock(client), redis=client))
    store = worker.world.store

    def services(cfg: Config) -> Services:
        live = LiveStore.on(fakeredis.FakeAsyncRedis(server=server, decode_responses=True), store.keys)
        return Services(cfg, store, worker, RunWaiter(live), live)

    try:
        with TestClient(create_app(config, services=services)) as http:
            http.headers["Authorization"] = f"Bearer {TOKEN}"
            yield App(http, store, worker)
    finally:
        worker.stop()


@pytest.fixture
def app() -> Iterator[App]:
    with app_for(config_with()) as made:
        yield made


def hi(text: str = "hi", **body: Any) -> dict[str, Any]:
    return {"model": "openclaw", "messages": [{"role": "user", "content": text}], **body}


def sse_data(text: str) -> list[Any]:
    return [
        json.loads(line[6:]) if line != "data: [DONE]" else "[DONE]"
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


def run_id_of(answer_id: str) -> str:
    return answer_id.split("_", 1)[1]


# --- models -------------------------------------------------------------------------------------------------


def test_models_lists_the_two_aliases_then_every_agent(app: App) -> None:
    answer = app.http.get("/v1/models")
    assert answer.status_code == 200
    model = {"object": "model", "created": 0, "owned_by": "openclaw", "permission": []}
    ids = [
        "openclaw",
        "openclaw/default",
        "openclaw/main",
        "openclaw/research",
        "openclaw/broken",
        "openclaw/slow",
    ]
    assert answer.json() == {"object": "list", "data": [{"id": i, **model} for i in ids]}


def test_a_token_scoped_to_agents_is_listed_only_its_agents(app: App) -> None:
    answer = app.http.get("/v1/models", headers={"Authorization": f"Bearer {RESEARCH_ONLY}"})
    assert [m["id"] for m in answer.json()["data"]] == ["openclaw", "openclaw/default", "openclaw/research"]


@pytest.mark.parametrize("path", ["openclaw%2Fresearch", "openclaw/research", "openclaw", "openclaw/default"])
def test_one_model_is_found_by_its_id_encoded_or_not(app: App, path: str) -> None:
    answer = app.http.get(f"/v1/models/{path}")
    assert answer.status_code == 200
    assert answer.json()["id"] == path.replace("%2F", "/")


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("openclaw%2Fnope", 404, "Model 'openclaw/nope' not found."),
        ("openclaw:main", 404, "Model 'openclaw:main' not found."),
        ("OpenClaw", 404, "Model 'OpenClaw' not found."),
        ("gpt-4", 400, "Invalid model id."),
        ("openclaw/main/x", 400, "Invalid model id."),
        ("", 400, "Missing model id."),
        ("%ZZ", 400, "Invalid model id encoding."),
    ],
)
def test_a_model_that_is_not_listed_is_answered_as_the_release_does(
    app: App, path: str, status: int, message: str
) -> None:
    answer = app.http.get(f"/v1/models/{path}")
    assert (answer.status_code, answer.json()) == (
        status,
        {"error": {"message": message, "type": "invalid_request_error"}},
    )


# --- the gate: enabled, authorized, the right method --------------------------------------------------------


def test_disabled_endpoints_are_a_plain_not_found_whatever_the_token() -> None:
    with app_for(config_with(http={"endpoints": {}})) as app:
        for method, path in [
            ("POST", "/v1/chat/completions"),
            ("POST", "/v1/responses"),
            ("GET", "/v1/models"),
        ]:
            answer = app.http.request(method, path, headers={"Authorization": "Bearer wrong"})
            assert (answer.status_code, answer.text) == (404, "Not Found")
            assert answer.headers["content-type"].startswith("text/plain")


def test_models_answer_when_only_one_endpoint_is_enabled() -> None:
    with app_for(config_with(http={"endpoints": {"responses": {"enabled": True}}})) as app:
        assert app.http.get("/v1/models").status_code == 200
        assert app.chat(hi()).status_code == 404
        assert app.respond({"model": "openclaw", "input": "hi"}).status_code == 200


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/responses", "/v1/models"])
@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token"])
def test_a_missing_or_wrong_token_is_the_releases_401(app: App, path: str, authorization: str | None) -> None:
    headers = {"Authorization": authorization or ""}
    method = "GET" if path == "/v1/models" else "POST"
    answer = app.http.request(method, path, json=hi(), headers=headers)
    assert (answer.status_code, answer.json()) == (
        401,
        {"error": {"message": "Unauthorized", "type": "unauthorized"}},
    )


def test_a_token_not_for_the_agent_is_forbidden_and_nothing_is_accepted(app: App) -> None:
    answer = app.chat(hi(), Authorization=f"Bearer {RESEARCH_ONLY}")
    assert answer.status_code == 403
    assert answer.json() == {
        "error": {"message": 'this token may not act for agent "main"', "type": "forbidden"}
    }
    assert app.worker.dispatched == []


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/v1/chat/completions", "POST"),
        ("PUT", "/v1/responses", "POST"),
        ("POST", "/v1/models", "GET"),
        ("DELETE", "/v1/models/openclaw", "GET"),
    ],
)
def test_a_wrong_method_is_a_plain_405_naming_the_one_allowed(
    app: App, method: str, path: str, allow: str
) -> None:
    answer = app.http.request(method, path)
    assert (answer.status_code, answer.text, answer.headers["allow"]) == (405, "Method Not Allowed", allow)


def test_the_compatibility_routes_stay_out_of_the_openapi_document(app: App) -> None:
    paths = app.http.get("/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith(("/v1/models", "/v1/chat", "/v1/responses"))]


# --- chat completions ---------------------------------------------------------------------------------------


def test_a_chat_completion_is_the_agents_reply_in_the_releases_shape(app: App) -> None:
    answer = app.chat(hi("hello there", user="alice"))
    assert answer.status_code == 200
    body = answer.json()
    assert re.fullmatch(f"chatcmpl_{UUID}", body["id"])
    run = app.store.runs.get(run_id_of(body["id"]))
    assert run is not None
    assert run.status is RunStatus.OK
    assert abs(body["created"] - time.time()) < 60
    assert body == {
        "id": body["id"],
        "object": "chat.completion",
        "created": body["created"],
        "model": "openclaw",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "echo: hello there"},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": run.usage.input_tokens,
            "completion_tokens": run.usage.output_tokens,
            "total_tokens": (run.usage.input_tokens or 0) + (run.usage.output_tokens or 0),
        },
    }


def test_a_chat_completion_repeated_with_its_idempotency_key_answers_with_its_first_run(app: App) -> None:
    first = app.chat(hi("only once"), **{"Idempotency-Key": "completion-1"}).json()
    again = app.chat(hi("only once"), **{"Idempotency-Key": "completion-1"}).json()
    assert again["id"] == first["id"]
    assert again["choices"] == first["choices"]
    other = app.chat(hi("something else"), **{"Idempotency-Key": "completion-1"})
    assert other.status_code == 422


def test_a_chat_command_is_text_for_the_agent_as_the_release_takes_it(app: App) -> None:
    body = app.chat(hi("/status", user="alice")).json()
    assert body["choices"][0]["message"]["content"] == "echo: /status"
    assert app.transcript("agent:main:openai-user:alice") == [
        ("user", "/status"),
        ("assistant", "echo: /status"),
    ]


def test_the_model_is_answered_as_the_request_named_it(app: App) -> None:
    assert app.chat(hi(model="openclaw/default")).json()["model"] == "openclaw/default"
    assert app.chat({"messages": [{"role": "user", "content": "x"}]}).json()["model"] == "openclaw"


def test_the_same_user_is_one_session_across_requests(app: App) -> None:
    app.chat(hi("one", user="alice"))
    app.chat(hi("two", user="alice"))
    assert app.transcript("agent:main:openai-user:alice") == [
        ("user", "one"),
        ("assistant", "echo: one"),
        ("user", "two"),
        ("assistant", "echo: two"),
    ]


def test_without_user_or_session_header_each_request_is_a_fresh_session(app: App) -> None:
    keys = {app.store.runs.get(run_id_of(app.chat(hi()).json()["id"])).session_key for _ in range(2)}  # type: ignore[union-attr]
    assert len(keys) == 2
    assert all(re.fullmatch(f"agent:main:openai:{UUID}", key) for key in keys)


@pytest.mark.parametrize(
    ("model", "headers", "key"),
    [
        ("openclaw", {"x-openclaw-session-key": "pytest-explicit"}, "agent:main:pytest-explicit"),
        ("openclaw/research", {"x-openclaw-session-key": "Team:Room"}, "agent:research:team:room"),
        ("openclaw", {"x-openclaw-session-key": "agent:research:elsewhere"}, "agent:research:elsewhere"),
        ("openclaw:research", {}, "agent:research:openai-user:bob"),
        ("agent:research", {}, "agent:research:openai-user:bob"),
        ("openclaw/default", {"x-openclaw-agent-id": "Research"}, "agent:research:openai-user:bob"),
    ],
)
def test_the_model_and_headers_choose_the_agent_and_session(
    app: App, model: str, headers: dict[str, str], key: str
) -> None:
    answer = app.chat(hi(model=model, user="bob"), **headers)
    assert answer.status_code == 200, answer.text
    run = app.store.runs.get(run_id_of(answer.json()["id"]))
    assert run is not None
    assert run.session_key == key


def test_a_request_in_a_chain_is_its_next_hop(app: App) -> None:
    """A client in a chain (another clawbus's run, a script relaying one) sends it: the run continues it."""
    chain = {"chainId": "chain-1", "hops": 2, "path": ["agent:main:main", "agent:research:main"]}
    answer = app.chat(hi(user="bob"), **{"x-clawbus-chain": json.dumps(chain)})
    assert answer.status_code == 200, answer.text
    run = app.store.runs.get(run_id_of(answer.json()["id"]))
    assert run is not None
    assert (run.chain_id, run.hops) == ("chain-1", 3)
    assert run.chain_path == [*chain["path"], "agent:main:openai-user:bob"]


def test_a_request_whose_chain_is_at_a_guard_is_forbidden_and_makes_no_run(app: App) -> None:
    chain = {"chainId": "chain-2", "hops": 8, "path": ["agent:main:main"]}
    answer = app.chat(hi(user="carol"), **{"x-clawbus-chain": json.dumps(chain)})
    assert answer.status_code == 403
    error = answer.json()["error"]
    assert error["type"] == "forbidden"
    assert error["message"].startswith("agent-to-agent chain stopped: it already has 8 hops")
    assert app.transcript("agent:main:openai-user:carol") == []


@pytest.mark.parametrize("sent", ["not json", json.dumps({"chainId": "x"}), json.dumps([1, 2])])
def test_an_unreadable_chain_header_starts_a_chain_of_its_own(app: App, sent: str) -> None:
    answer = app.chat(hi(user="dave"), **{"x-clawbus-chain": sent})
    assert answer.status_code == 200, answer.text
    run = app.store.runs.get(run_id_of(answer.json()["id"]))
    assert run is not None
    assert (run.chain_id, run.hops) == (run.run_id, 0)


@pytest.mark.parametrize(
    "key", ["subagent:x", "cron:nightly", "ACP:x", "agent:main:subagent:x", "agent:main:cron:x"]
)
def test_reserved_session_namespaces_are_refused(app: App, key: str) -> None:
    answer = app.chat(hi(), **{"x-openclaw-session-key": key})
    assert answer.status_code == 400
    assert answer.json()["error"] == {
        "message": "`x-openclaw-session-key` cannot use reserved internal session namespaces.",
        "type": "invalid_request_error",
    }


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (hi(model="gpt-4"), {}, "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."),
        (
            hi(model="gpt-4"),
            {"x-openclaw-agent-id": "main"},
            "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`.",
        ),
        (hi(model="openclaw/nope"), {}, "Unknown agent 'nope'."),
        (hi(), {"x-openclaw-agent-id": "nope"}, "Unknown agent 'nope'."),
        (hi(), {"x-openclaw-agent-id": "bad id!"}, "Unknown agent 'bad id!'."),
        ({}, {}, "Missing user message in `messages`."),
        (
            {"messages": [{"role": "system", "content": "only rules"}]},
            {},
            "Missing user message in `messages`.",
        ),
        ({"messages": "hi"}, {}, "messages: Invalid input: expected array, received string"),
        ({"model": None}, {}, "model: Invalid input: expected string, received null"),
        ({"max_tokens": 1.5}, {}, "max_tokens: Invalid input: expected int, received number"),
        ({"max_tokens": 0}, {}, "max_tokens: Too small: expected number to be >0"),
        ({"stream": "yes"}, {}, "stream: Invalid input: expected boolean, received string"),
        ({"stop": 5}, {}, "stop: Invalid input"),
        (
            {"stream_options": {"include_usage": "x"}},
            {},
            "stream_options.include_usage: Invalid input: expected boolean, received string",
        ),
        ({"tools": {}}, {}, "tools: Invalid input: expected array, received object"),
        (hi(stop=["a", "b", "c", "d", "e"]), {}, "Invalid stop: stop supports at most 4 sequences"),
        (hi(temperature=3), {}, "`temperature` must be between 0 and 2."),
        (hi(seed=1.5), {}, "`seed` must be an integer."),
        (
            hi(response_format={"type": "bad"}),
            {},
            "Invalid response_format: response_format.type must be text, json_object, or json_schema",
        ),
        (hi(tools=[{"type": "x"}]), {}, "Invalid tools/tool_choice: only function tools are supported"),
        (
            hi(tool_choice={"type": "allowed_tools"}),
            {},
            "Invalid tools/tool_choice: tool_choice allowed_tools is not supported",
        ),
        (
            hi(tool_choice="required"),
            {},
            "Invalid tools/tool_choice: tool_choice=required but no tools were provided",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
                    }
                ]
            },
            {},
            "Invalid image_url content in `messages`.",
        ),
        (
            hi(),
            {"x-openclaw-model": "openai/gpt-4o"},
            "`x-openclaw-model` is not supported: clawbus runs use the agent's configured model",
        ),
    ],
)
def test_a_bad_request_is_refused_with_the_releases_text_and_nothing_is_accepted(
    app: App, body: dict[str, Any], headers: dict[str, str], message: str
) -> None:
    answer = app.chat(body, **headers)
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": {"message": message, "type": "invalid_request_error"}},
    )
    assert app.worker.dispatched == []


def test_a_body_that_is_not_json_is_refused(app: App) -> None:
    answer = app.http.post(
        "/v1/chat/completions", content=b"nope", headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_request_error"


def test_system_messages_are_the_runs_context_and_earlier_turns_frame_the_message(app: App) -> None:
    messages = [
        {"role": "system", "content": "be terse"},
        {"role": "developer", "content": "no emoji"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "text", "text": "part"}]},
        {"role": "assistant", "content": "a trailing turn is left out"},
    ]
    answer = app.chat({"model": "openclaw", "messages": messages}, **{"x-openclaw-session-key": "framed"})
    run = app.store.runs.get(run_id_of(answer.json()["id"]))
    assert run is not None
    assert run.context == "be terse\n\nno emoji"
    framed = (
        "[Chat messages since your last reply - for context]\nUser: first\nAssistant: ok\n\n"
        "[Current message - respond to this]\nUser: second\npart"
    )
    # As the live gateway's transcript has it; the system text is in no transcript.
    assert app.transcript("agent:main:framed") == [("user", framed), ("assistant", f"echo: {framed}")]


def test_tool_calls_and_results_are_written_into_the_message(app: App) -> None:
    messages = [
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "w", "arguments": {"city": "Oslo"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "cold"},
    ]
    answer = app.chat(
        {
            "model": "openclaw",
            "messages": messages,
            "tools": [{"type": "function", "function": {"name": "w"}}],
        }
    )
    assert answer.json()["choices"][0]["message"]["content"] == (
        "echo: [Chat messages since your last reply - for context]\nUser: weather?\n"
        'Assistant: tool_call id=c1 name=w arguments={"city":"Oslo"}\n\n'
        "[Current message - respond to this]\nTool:c1: cold"
    )


def test_a_demanded_client_tool_call_is_the_releases_502_without_a_run(app: App) -> None:
    tools = [{"type": "function", "function": {"name": "lookup"}}]
    answer = app.chat(hi(tools=tools, tool_choice={"type": "function", "function": {"name": "lookup"}}))
    assert (answer.status_code, answer.json()) == (
        502,
        {
            "error": {
                "message": "tool_choice required a lookup tool call, but the agent did not produce one",
                "type": "api_error",
            }
        },
    )
    assert app.worker.dispatched == []


def test_a_failed_run_answers_500_api_error_with_its_redacted_error(app: App) -> None:
    answer = app.chat(hi(model="openclaw/broken"))
    assert answer.status_code == 500
    error = answer.json()["error"]
    assert error["type"] == "api_error"
    assert "model down" in error["message"]
    assert SECRET not in error["message"]


def test_a_reply_not_ready_within_max_wait_is_504_and_the_run_goes_on() -> None:
    with app_for(config_with(maxWaitSeconds=1)) as app:
        started = time.monotonic()
        answer = app.chat(hi(model="openclaw/slow"), **{"x-openclaw-session-key": "patient"})
        assert 1 <= time.monotonic() - started < 3
        assert answer.status_code == 504
        run_id = app.worker.dispatched[0].run_id
        assert answer.json()["error"] == {
            "message": f"timed out after 1s waiting for the reply (gateway.maxWaitSeconds); the run continues: wait again with GET /v1/runs/{run_id}/wait",
            "type": "api_error",
        }
        app.worker.threads[0].join(10)
        run = app.store.runs.get(run_id)
        assert run is not None
        assert run.status is RunStatus.OK


def test_a_streamed_chat_completion_is_role_text_finish_usage_then_done(app: App) -> None:
    answer = app.chat(hi("stream me", stream=True, stream_options={"include_usage": True}))
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
    chunks = sse_data(answer.text)
    assert chunks[-1] == "[DONE]"
    first = chunks[0]
    assert re.fullmatch(f"chatcmpl_{UUID}", first["id"])
    head = {
        "id": first["id"],
        "object": "chat.completion.chunk",
        "created": first["created"],
        "model": "openclaw",
    }
    run = app.store.runs.get(run_id_of(first["id"]))
    assert run is not None
    assert chunks[:-1] == [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {"content": "echo: stream me"}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            **head,
            "choices": [],
            "usage": {
                "prompt_tokens": run.usage.input_tokens,
                "completion_tokens": run.usage.output_tokens,
                "total_tokens": (run.usage.input_tokens or 0) + (run.usage.output_tokens or 0),
            },
        },
    ]


def test_a_stream_without_include_usage_has_no_usage_chunk(app: App) -> None:
    chunks = sse_data(app.chat(hi(stream=True)).text)
    assert [c["choices"][0].get("finish_reason") for c in chunks[:-1]] == [None, None, "stop"]


def test_a_failed_run_streams_an_error_object_then_done(app: App) -> None:
    chunks = sse_data(app.chat(hi(model="openclaw/broken", stream=True)).text)
    assert chunks[-1] == "[DONE]"
    assert chunks[-2]["error"]["type"] == "api_error"
    assert "model down" in chunks[-2]["error"]["message"]


# --- responses ----------------------------------------------------------------------------------------------


def test_a_response_is_the_agents_reply_in_the_releases_shape(app: App) -> None:
    answer = app.respond({"model": "openclaw", "user": "carol", "input": "inbound via responses"})
    assert answer.status_code == 200
    body = answer.json()
    assert re.fullmatch(f"resp_{UUID}", body["id"])
    item = body["output"][0]
    assert re.fullmatch(f"msg_{UUID}", item["id"])
    run = app.store.runs.get(run_id_of(body["id"]))
    assert run is not None
    assert run.session_key == "agent:main:openresponses-user:carol"
    prompt, output = run.usage.input_tokens or 0, run.usage.output_tokens or 0
    assert body == {
        "id": body["id"],
        "object": "response",
        "created_at": body["created_at"],
        "status": "completed",
        "model": "openclaw",
        "output": [
            {
                "type": "message",
                "id": item["id"],
                "role": "assistant",
                "content": [{"type": "output_text", "text": "echo: inbound via responses"}],
                "phase": "final_answer",
                "status": "completed",
            }
        ],
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + output,
        },
    }


def test_without_user_a_response_is_a_fresh_openresponses_session(app: App) -> None:
    run = app.store.runs.get(run_id_of(app.respond({"model": "openclaw", "input": "x"}).json()["id"]))
    assert run is not None
    assert re.fullmatch(f"agent:main:openresponses:{UUID}", run.session_key)


def test_instructions_and_system_items_are_the_runs_context(app: App) -> None:
    items = [
        {"type": "message", "role": "developer", "content": "D"},
        {"type": "message", "role": "user", "content": "a"},
        {"type": "message", "role": "assistant", "content": "b"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "c"}]},
    ]
    answer = app.respond({"model": "openclaw", "instructions": "I", "input": items})
    run = app.store.runs.get(run_id_of(answer.json()["id"]))
    assert run is not None
    assert run.context == "I\n\nD"
    assert answer.json()["output"][0]["content"][0]["text"] == (
        "echo: [Chat messages since your last reply - for context]\nUser: a\nAssistant: b\n\n"
        "[Current message - respond to this]\nUser: c"
    )


def test_previous_response_id_continues_its_session(app: App) -> None:
    first = app.respond({"model": "openclaw", "input": "one"}).json()
    second = app.respond({"model": "openclaw", "input": "two", "previous_response_id": first["id"]}).json()
    keys = [app.store.runs.get(run_id_of(r["id"])).session_key for r in (first, second)]  # type: ignore[union-attr]
    assert keys[0] == keys[1]
    # Another agent's response, or an unknown id, starts afresh.
    other = app.respond(
        {"model": "openclaw/research", "input": "x", "previous_response_id": first["id"]}
    ).json()
    assert app.store.runs.get(run_id_of(other["id"])).session_key != keys[0]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "model: Invalid input: expected string, received undefined"),
        ({"model": "openclaw"}, "input: Invalid input"),
        ({"model": "openclaw", "input": "hi", "foo": 1}, ': Unrecognized key: "foo"'),
        ({"model": "openclaw", "input": [{"type": "bogus"}]}, "input: Invalid input"),
        (
            {"model": "openclaw", "input": "x", "temperature": 3},
            "temperature: Too big: expected number to be <=2",
        ),
        ({"model": "openclaw", "input": "x", "tool_choice": "bad"}, "tool_choice: Invalid input"),
        (
            {"model": "openclaw", "input": "x", "tools": [{"type": "function", "name": ""}]},
            "tools.0.name: Tool name cannot be empty",
        ),
        (
            {"model": "openclaw", "input": "x", "reasoning": {"effort": "max"}},
            'reasoning.effort: Invalid option: expected one of "low"|"medium"|"high"',
        ),
        (
            {"model": "openclaw", "input": "x", "text": {"format": {"type": "json"}}},
            'text.format.type: Invalid input: expected "text"',
        ),
        ({"model": None, "input": "x"}, "model: Invalid input: expected string, received null"),
        (
            {"model": "openclaw", "input": [{"type": "message", "role": "system", "content": "x"}]},
            "Missing user message in `input`.",
        ),
        ({"model": "gpt-4", "input": "hi"}, "Invalid `model`. Use `openclaw` or `openclaw/<agentId>`."),
        ({"model": "openclaw", "input": "hi", "tool_choice": "required"}, "invalid tool configuration"),
        (
            {
                "model": "openclaw",
                "input": [
                    {
                        "type": "message",
                        "role": "user",
                        "content": [
                            {"type": "input_image", "source": {"type": "url", "url": "https://x/y.png"}}
                        ],
                    }
                ],
            },
            "invalid request",
        ),
    ],
)
def test_a_bad_response_request_is_refused_with_the_releases_text(
    app: App, body: dict[str, Any], message: str
) -> None:
    answer = app.respond(body)
    assert (answer.status_code, answer.json()) == (
        400,
        {"error": {"message": message, "type": "invalid_request_error"}},
    )
    assert app.worker.dispatched == []


def test_a_failed_run_is_a_failed_response(app: App) -> None:
    answer = app.respond({"model": "openclaw/broken", "input": "x"})
    assert answer.status_code == 500
    body = answer.json()
    assert (body["status"], body["output"], body["error"]["code"]) == ("failed", [], "api_error")
    assert "model down" in body["error"]["message"]


def test_a_streamed_response_is_the_openresponses_event_sequence(app: App) -> None:
    answer = app.respond({"model": "openclaw", "input": "yo", "stream": True})
    assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
    kinds = re.findall(r"^event: (\S+)$", answer.text, re.MULTILINE)
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    events = sse_data(answer.text)
    assert events[-1] == "[DONE]"
    assert [e["type"] for e in events[:-1]] == kinds
    assert events[0]["response"]["status"] == "in_progress"
    assert events[2]["item"] == {
        "type": "message",
        "id": events[2]["item"]["id"],
        "role": "assistant",
        "content": [],
        "status": "in_progress",
    }
    assert events[4]["delta"] == "echo: yo"
    assert events[8]["response"]["output"][0]["content"][0]["text"] == "echo: yo"


def test_a_failed_streamed_response_ends_with_response_failed(app: App) -> None:
    events = sse_data(app.respond({"model": "openclaw/broken", "input": "x", "stream": True}).text)
    assert events[-1] == "[DONE]"
    assert events[-2]["type"] == "response.failed"
    assert events[-2]["response"]["status"] == "failed"


# --- the stream only appends --------------------------------------------------------------------------------


def test_streamed_pieces_go_out_as_they_come_and_the_rest_of_the_reply_at_the_end() -> None:
    text = AppendOnlyText()
    assert [text.piece("Hel"), text.piece("lo")] == ["Hel", "lo"]
    assert text.rest("Hello world") == " world"


def test_text_of_an_earlier_step_stays_and_only_the_last_steps_reply_is_completed() -> None:
    text = AppendOnlyText()
    text.piece("Let me look. ")
    text.piece("Found")
    assert text.rest("Found it.") == " it."


def test_a_step_sent_again_holds_the_text_back_until_the_end() -> None:
    text = AppendOnlyText()
    text.piece("Hel")
    text.hold()
    assert text.piece("Hello") == ""
    assert text.rest("Hello") == "lo"


class _Live:
    """A run's event stream as LiveStore gives it: every entry at once, then the run."""

    def __init__(self, entries: list[dict[str, str]], reply: str) -> None:
        self.entries = [(f"{i}-0", fields) for i, fields in enumerate(entries, 1)]
        self.reply = reply
        self.reads = 0

    async def follow_run(
        self, run_id: str, cursor: str | None, block_ms: int | None
    ) -> list[tuple[str, dict[str, str]]]:
        self.reads += 1
        return self.entries if cursor is None else []

    async def read_run(self, run_id: str) -> Any:
        return SimpleNamespace(
            run_id=run_id, status=RunStatus.OK, steered_into=None, reply=self.reply, error=None, usage=Usage()
        )


def test_following_a_run_yields_its_text_pieces_then_the_rest_of_its_reply() -> None:
    live = _Live(
        [
            {"type": "queued"},
            {"type": "started", "attempt": "1"},
            {"type": "text", "text": "ec"},
            {"type": "text", "text": "ho"},
            {"type": "ended", "status": "ok"},
        ],
        reply="echo: hi",
    )
    services: Any = type("S", (), {"live": live})()

    async def collect() -> list[Any]:
        events: AsyncIterator[str | Ended | None] = follow(services, "r1", anyio.current_time() + 5, 5)
        return [event async for event in events]

    got = anyio.run(collect)
    assert got[:2] == ["ec", "ho"]
    ended = got[2]
    assert isinstance(ended, Ended)
    assert isinstance(ended.outcome, Reply)
    assert (ended.outcome.text, ended.rest) == ("echo: hi", ": hi")


def test_a_new_attempt_after_a_crash_holds_the_text_and_completes_it_at_the_end() -> None:
    live = _Live(
        [
            {"type": "started", "attempt": "1"},
            {"type": "text", "text": "ech"},
            {"type": "started", "attempt": "2"},
            {"type": "text", "text": "echo: hi"},
            {"type": "ended", "status": "ok"},
        ],
        reply="echo: hi",
    )
    services: Any = type("S", (), {"live": live})()

    async def collect() -> list[Any]:
        return [event async for event in follow(services, "r1", anyio.current_time() + 5, 5)]

    got = anyio.run(collect)
    assert got[0] == "ech"
    assert got[1].rest == "o: hi"
    assert "".join([got[0], got[1].rest]) == "echo: hi"
