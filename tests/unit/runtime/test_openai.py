"""shared/adapters/runtimes/openai.py against a real HTTP server speaking the chat completions protocol."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from clawbus.shared.adapters.runtimes.openai import ModelRequestFailed, OpenAIRuntime, chat_messages, sse_data
from clawbus.shared.adapters.runtimes.registry import runtime_for
from clawbus.shared.config import Config, OpenAIProvider
from clawbus.shared.domain.chains import Chain
from clawbus.shared.ports.runtime import CancelSignal, RunCancelled, RunTimedOut, StepRequest
from clawbus.shared.runner.tool_schemas import tool_schemas
from clawbus.shared.wire.models import Message, Sampling, SessionEntry, TextBlock, ToolCallBlock
from tests.support.fake_openai import FakeOpenAI, Reply, failure, fake_openai, paced, text, tool
from tests.support.processes import wait_for


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with fake_openai() as fake:
        yield fake


def runtime(server: FakeOpenAI, **provider: Any) -> OpenAIRuntime:
    settings = {
        "type": "openai",
        "baseUrl": server.url,
        "models": [{"id": "m", "cost": {"input": 2.0, "output": 8.0}, "reasoning": True}],
        **provider,
    }
    config = Config.model_validate({"models": {"providers": {"fake": settings}}})
    made = runtime_for(config, "fake/m")
    assert isinstance(made, OpenAIRuntime)
    return made


def request(*messages: Message, **extra: Any) -> StepRequest:
    fields: dict[str, Any] = {
        "agent_id": "main",
        "model": "fake/m",
        "session": None,
        "messages": list(messages),
    }
    return StepRequest(**{**fields, **extra})


def user(value: str) -> Message:
    return Message.of("user", value, timestamp=1)


@pytest.fixture(autouse=True)
def empty_queue(server: FakeOpenAI) -> Iterator[None]:
    server.queues.clear()
    server.requests.clear()
    return


@pytest.mark.parametrize("stream", [True, False])
def test_a_text_answer_becomes_the_reply_with_usage_and_cost(server: FakeOpenAI, stream: bool) -> None:
    server.script("m", text("hello there", usage=(1000, 500)))
    streamed: list[str] = []
    result = runtime(server, stream=stream).step(request(user("hi"), on_text=streamed.append))
    assert result.reply == "hello there"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (1000, 500)
    assert result.usage.cost_usd == pytest.approx((1000 * 2.0 + 500 * 8.0) / 1_000_000)
    assert "".join(streamed) == "hello there"
    if stream:
        assert len(streamed) > 1  # it arrived in pieces, as they came


@pytest.mark.parametrize("stream", [True, False])
def test_tool_calls_come_back_with_their_parsed_arguments(server: FakeOpenAI, stream: bool) -> None:
    server.script("m", tool("sessions_send", sessionKey="agent:research:main", message="2+2?"))
    result = runtime(server, stream=stream).step(
        request(user("ask research"), tool_schemas=tool_schemas("openai", ["sessions_send"]))
    )
    assert result.reply == ""
    [call] = result.tool_calls
    assert call.name == "sessions_send"
    assert call.arguments == {"sessionKey": "agent:research:main", "message": "2+2?"}
    sent = server.requests[-1]
    assert [t["function"]["name"] for t in sent["tools"]] == ["sessions_send"]


def test_a_429_is_retried_after_its_retry_after(server: FakeOpenAI) -> None:
    server.script("m", failure(429, "slow down", **{"Retry-After": "0.01"}), text("finally"))
    assert runtime(server).step(request(user("hi"))).reply == "finally"
    assert len(server.requests) == 2


def test_a_5xx_is_retried_then_given_up(server: FakeOpenAI) -> None:
    server.script("m", *[failure(503, "overloaded", **{"Retry-After": "0"})] * 3)
    with pytest.raises(ModelRequestFailed, match=r"HTTP 503: overloaded.*gave up after 3 attempts"):
        runtime(server, maxRetries=2).step(request(user("hi")))


@pytest.mark.parametrize("status", [500, 501, 502, 529])
def test_every_5xx_is_retried(server: FakeOpenAI, status: int) -> None:
    server.script("m", failure(status, "down", **{"Retry-After": "0"}), text("back"))
    assert runtime(server).step(request(user("hi"))).reply == "back"
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 408, 409, 422])
def test_a_4xx_other_than_429_fails_at_once(server: FakeOpenAI, status: int) -> None:
    server.script("m", failure(status, "no"))
    with pytest.raises(ModelRequestFailed, match=f"HTTP {status}: no"):
        runtime(server).step(request(user("hi")))
    assert len(server.requests) == 1


def test_a_model_still_streaming_at_the_time_limit_is_cut_off(server: FakeOpenAI) -> None:
    server.script("m", Reply(text="word " * 40, chunk_delay=0.05))  # 50 chunks: 2.5 s of talking
    heard: list[str] = []
    with pytest.raises(RunTimedOut, match="still answering"):
        runtime(server, stream=True).step(request(user("hi"), time_limit=0.5, on_text=heard.append))
    # Cut off mid-answer: only part of the text was read before the limit stopped the step.
    assert 0 < len("".join(heard)) < len("word " * 40)


def test_text_streamed_before_a_retried_failure_is_declared_void(server: FakeOpenAI) -> None:
    server.script("m", Reply(text="partial answer", cut_after=2), text("whole answer"))
    streamed: list[str] = []
    restarts: list[str] = []
    result = runtime(server, stream=True).step(
        request(user("hi"), on_text=streamed.append, on_restart=lambda: restarts.append("reset"))
    )
    assert result.reply == "whole answer"
    assert restarts == ["reset"]
    assert "".join(streamed).endswith("whole answer")


def test_a_400_fails_at_once_with_the_servers_message(server: FakeOpenAI) -> None:
    server.script("m", failure(400, "messages: too long"))
    with pytest.raises(ModelRequestFailed, match="HTTP 400: messages: too long"):
        runtime(server).step(request(user("hi")))
    assert len(server.requests) == 1


def test_an_unreachable_endpoint_is_a_clear_failure() -> None:
    provider = OpenAIProvider.model_validate(
        {"type": "openai", "baseUrl": refused_url(), "models": ["m"], "maxRetries": 1}
    )
    made = OpenAIRuntime(provider, provider.model("m"), httpx.HTTPTransport(), sleep=lambda _: None)
    with pytest.raises(ModelRequestFailed, match="unreachable"):
        made.step(request(user("hi")))


def test_the_time_limit_bounds_the_retries(server: FakeOpenAI) -> None:
    server.script("m", failure(429, "slow down", **{"Retry-After": "5"}))
    with pytest.raises(RunTimedOut):
        runtime(server).step(request(user("hi"), time_limit=0.5))


def test_the_api_key_comes_from_the_named_environment_variable(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test")
    runtime(server, apiKeyEnv="FAKE_OPENAI_KEY").step(request(user("hi")))
    assert server.headers[-1]["authorization"] == "Bearer sk-test"


def test_a_runs_chain_goes_with_its_model_calls_as_its_id_and_hops(server: FakeOpenAI) -> None:
    runtime(server).step(request(user("hi"), chain=Chain("run-1", 2, ("agent:main:main", "agent:ops:main"))))
    assert json.loads(server.headers[-1]["x-clawbus-chain"]) == {"chainId": "run-1", "hops": 2, "path": []}


def test_thinking_maps_to_reasoning_effort_on_reasoning_models(server: FakeOpenAI) -> None:
    made = runtime(server)
    assert made.body(request(user("hi"), thinking="high"))["reasoning_effort"] == "high"
    assert "reasoning_effort" not in made.body(request(user("hi"), thinking="off"))
    assert "reasoning_effort" not in made.body(request(user("hi")))


def test_a_requesters_sampling_goes_to_the_model_with_its_cap_within_the_models(server: FakeOpenAI) -> None:
    sampling = Sampling(
        max_tokens=64,
        temperature=0.2,
        top_p=0.9,
        frequency_penalty=0.5,
        presence_penalty=-0.5,
        seed=7,
        stop=["END"],
        response_format={"type": "json_object"},
    )
    runtime(server).step(request(user("hi"), sampling=sampling))
    sent = server.requests[-1]
    assert {k: sent[k] for k in sampling.model_dump(exclude_none=True)} == sampling.model_dump(
        exclude_none=True
    )
    # The model's configured maxTokens is the operator's bound: a requester asks below it, never above.
    capped = runtime(server, models=[{"id": "m", "maxTokens": 32}])
    assert capped.body(request(user("hi"), sampling=sampling))["max_tokens"] == 32
    assert capped.body(request(user("hi"), sampling=Sampling(max_tokens=16)))["max_tokens"] == 16


def test_without_sampling_the_model_gets_only_what_is_configured(server: FakeOpenAI) -> None:
    body = runtime(server).body(request(user("hi")))
    assert {"max_tokens", "temperature", "top_p", "stop", "seed"}.isdisjoint(body)


def test_the_context_and_agent_become_system_text() -> None:
    session = SessionEntry.model_validate(
        {
            "key": "agent:main:main",
            "sessionId": "s",
            "agentId": "main",
            "kind": "main",
            "createdAt": 1,
            "updatedAt": 1,
        }
    )
    [system, first] = chat_messages(
        request(user("hi"), context="Agent-to-agent message context:", session=session)
    )
    assert system["role"] == "system"
    assert 'agent "main"' in system["content"]
    assert "agent:main:main" in system["content"]
    assert system["content"].endswith("Agent-to-agent message context:")
    assert first == {"role": "user", "content": "hi"}


def test_tool_turns_become_assistant_tool_calls_and_tool_messages() -> None:
    call = ToolCallBlock(id="c1", name="sessions_list", arguments={"limit": 2})
    asked = Message(id="a", role="assistant", content=[TextBlock(text="looking"), call], timestamp=1)
    answered = Message.of("toolResult", '{"sessions": []}', timestamp=1).model_copy(
        update={"tool_call_id": "c1", "tool_name": "sessions_list"}
    )
    out = chat_messages(request(user("list"), asked, answered))
    assert out[2] == {
        "role": "assistant",
        "content": "looking",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "sessions_list", "arguments": '{"limit": 2}'},
            }
        ],
    }
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": '{"sessions": []}'}


def test_a_tail_cut_mid_exchange_leaves_out_the_orphaned_halves() -> None:
    orphan_result = Message.of("toolResult", "{}", timestamp=1).model_copy(update={"tool_call_id": "gone"})
    unanswered = Message(
        id="a", role="assistant", content=[ToolCallBlock(id="c9", name="sessions_list")], timestamp=1
    )
    out = chat_messages(request(orphan_result, user("hi"), unanswered))
    assert [m["role"] for m in out] == ["system", "user", "assistant"]
    assert "tool_calls" not in out[2]
    assert out[2]["content"] == ""


def refused_url() -> str:
    """A loopback port with nothing listening."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}/v1"


def test_threads_share_one_connection_pool_bounded_by_max_connections(server: FakeOpenAI) -> None:
    """A worker's threads make their model calls through one pool: past maxConnections, a call waits."""
    server.max_in_flight = 0
    server.default = lambda body: paced(f"for {body['messages'][-1]['content']}", 0.3)
    try:
        model = runtime(server, maxConnections=3, baseUrl=server.url + "/")  # a client of its own
        with ThreadPoolExecutor(max_workers=9) as pool:
            replies = list(pool.map(lambda i: model.step(request(user(f"q{i}"))).reply, range(9)))
    finally:
        server.default = text("ok")
    assert replies == [f"for q{i}" for i in range(9)]
    assert server.max_in_flight == 3


def test_a_streamed_step_leaves_its_connection_for_the_next_step(server: FakeOpenAI) -> None:
    """A stream is read past its ``[DONE]`` to the body's end: one left half-read would close its
    connection, and every step would pay a new one."""
    server.peers.clear()
    model = runtime(server, baseUrl=server.url + "//")  # a client of its own: no other test's connections
    for _ in range(3):
        assert model.step(request(user("hi"))).reply == "ok"
    assert len(server.peers) == 3
    assert len(set(server.peers)) == 1


def test_a_stream_that_stalls_with_its_connection_open_is_retried_after_the_idle_timeout(
    server: FakeOpenAI,
) -> None:
    settings = {"type": "openai", "baseUrl": server.url, "models": ["m"], "maxRetries": 1}
    config = Config.model_validate(
        {"models": {"providers": {"fake": settings}, "streamIdleTimeoutSeconds": 0.3}}
    )
    model = runtime_for(config, "fake/m")
    server.script("m", Reply(text="never comes", chunk_delay=5.0), text("second try"))
    started = time.monotonic()
    assert model.step(request(user("hi"))).reply == "second try"
    assert time.monotonic() - started < 3.0  # the stalled stream was given up at 0.3 s, not waited out


def test_a_cancel_hangs_up_on_a_model_that_has_said_nothing_yet(server: FakeOpenAI) -> None:
    """A model thinking for ten seconds before its first token: the cancel does not wait for it."""
    server.script("m", Reply(text="too late", chunk_delay=10))
    cancel = CancelSignal()
    threading.Timer(0.2, cancel.set).start()
    asked = time.monotonic()
    with pytest.raises(RunCancelled):
        runtime(server, stream=True).step(request(user("think hard"), cancel=cancel))
    # Far sooner than the model's ten seconds (2.3 s once beside the whole suite on a slow machine).
    assert time.monotonic() - asked < 5
    wait_for(lambda: server.hung_up, 5, what="the server to see the stream closed")


def test_event_data_is_read_whole_when_its_line_spans_chunks() -> None:
    chunks = [b'data: {"a": 1}\n\nda', b'ta: {"b":', b" 2}\r\n\n: a comment\nevent: x\ndata: [DONE]"]
    assert list(sse_data(iter(chunks))) == [b'{"a": 1}', b'{"b": 2}', b"[DONE]"]


def test_a_stream_chunk_that_is_not_json_fails_the_step_with_what_came() -> None:
    provider = OpenAIProvider.model_validate({"type": "openai", "baseUrl": "http://model", "models": ["m"]})
    broken = httpx.MockTransport(
        lambda _: httpx.Response(200, content=b"data: {not json\n\ndata: [DONE]\n\n")
    )
    made = OpenAIRuntime(provider, provider.model("m"), broken)
    with pytest.raises(ModelRequestFailed, match="not JSON"):
        made.step(request(user("hi")))
