"""Real agents on the real stack: worker processes run the openai runtime against a fake OpenAI-compatible
server over HTTP, and agents call the session tools themselves."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from clawbus_client import Client
from clawbus_client.models import SendResult

from clawbus.shared.tools.history_view import text_of
from tests.support.fake_openai import FakeOpenAI, Reply, fake_openai, last_tool_result, text, tool
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh

MAIN = "agent:main:main"
RESEARCH = "agent:research:main"
# USD per million tokens: what the fake charges for, so the cost is checked against arithmetic.
ALPHA_COST = {"input": 2.0, "output": 8.0}


def agents_config(server: FakeOpenAI) -> dict[str, Any]:
    return {
        "session": {"agentToAgent": {"maxPingPongTurns": 0}},
        "agents": {
            "list": [
                {
                    "id": "main",
                    "default": True,
                    "model": "fake/alpha",
                    "subagents": {"allowAgents": ["research"]},
                },
                {"id": "research", "model": "fake/beta"},
            ]
        },
        "models": {
            "providers": {
                "fake": {
                    "type": "openai",
                    "baseUrl": server.url,
                    "models": [{"id": "alpha", "cost": ALPHA_COST}, "beta"],
                    "maxRetries": 3,
                }
            }
        },
    }


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with fake_openai() as fake:
        yield fake


@pytest.fixture
def agents(fresh: Fresh, server: FakeOpenAI) -> Iterator[Client]:
    fresh.start_redis(config=agents_config(server))
    fresh.worker(concurrency=2)
    fresh.beat()
    _role, url = fresh.api()
    with Client(url, TOKEN) as client:
        yield client


def answer_with_the_reply(body: dict[str, Any]) -> Reply:
    seen = last_tool_result(body)
    return text(f"research says {seen['reply']}", usage=(150, 10))


def test_an_agent_sends_to_a_colleague_and_answers_with_its_reply(agents: Client, server: FakeOpenAI) -> None:
    server.script(
        "alpha",
        tool(
            "sessions_send", sessionKey=RESEARCH, message="what is 2+2?", timeoutSeconds=30, usage=(120, 30)
        ),
        answer_with_the_reply,
    )
    server.script("beta", text("4"), text("ANNOUNCE_SKIP"))
    result = agents.post_message(MAIN, "ask research what 2+2 is", timeout_seconds=60)
    assert isinstance(result, SendResult)
    assert result.status == "ok", result
    assert result.reply == "research says 4"
    # The second model step saw the tool result, and research saw the question as its own user turn. The
    # announce runs on research after the primary run, alongside main's second step, so it may come later.
    [research_turn, _announce] = wait_for(
        lambda: len(server.bodies("beta")) == 2 and server.bodies("beta"), 30, what="research's announce step"
    )
    assert research_turn["messages"][-1] == {"role": "user", "content": "what is 2+2?"}
    history = agents.sessions_history(MAIN, include_tools=True)
    roles = [m["role"] for m in history.wire()["messages"]]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    call = history.wire()["messages"][1]["content"][0]
    assert call["type"] == "toolCall"
    assert call["name"] == "sessions_send"
    session = agents.get_session(MAIN)
    assert (session.input_tokens, session.output_tokens) == (270, 40)
    assert session.wire()["totalTokens"] == 310
    assert session.wire()["contextTokens"] == 150  # the prompt of the latest step
    expected = (270 * ALPHA_COST["input"] + 40 * ALPHA_COST["output"]) / 1_000_000
    assert session.wire()["estimatedCostUsd"] == pytest.approx(expected)
    run = agents.get_run(result.run_id)
    assert run.usage.cost_usd == pytest.approx(expected)
    assert any(event.get("type") == "text" for event in agents.run_events(result.run_id))


def test_an_agent_spawns_a_researcher_and_later_receives_its_report(
    agents: Client, server: FakeOpenAI
) -> None:
    server.script(
        "alpha",
        tool("sessions_spawn", task="find the answer", agentId="research"),
        lambda body: text(f"spawned {last_tool_result(body)['childSessionKey']}"),
    )
    server.script("beta", text("the answer is 42"))
    result = agents.post_message(MAIN, "start a researcher", timeout_seconds=60)
    assert isinstance(result, SendResult)
    assert result.status == "ok", result
    child = result.reply.removeprefix("spawned ")
    assert child.startswith("agent:research:subagent:")

    def announced() -> list[dict[str, Any]]:
        messages = agents.sessions_history(MAIN).wire()["messages"]
        return [m for m in messages if (m.get("provenance") or {}).get("kind") == "subagent_announce"]

    [note] = wait_for(announced, 60, what="the sub-agent's report in main's transcript")
    # The researcher's reply is its result: it is asked nothing more (one model call).
    assert text_of(note).startswith("Status: success\nResult: the answer is 42\nNotes: - (none)\n")
    assert len(server.bodies("beta")) == 1


def test_a_model_error_ends_the_run_with_the_servers_message(agents: Client, server: FakeOpenAI) -> None:
    server.script("alpha", Reply(status=400, error="messages: context too long"))
    result = agents.post_message(MAIN, "hello", timeout_seconds=60)
    assert isinstance(result, SendResult)
    assert result.status == "error"
    assert result.error is not None
    assert "HTTP 400: messages: context too long" in result.error


def test_a_rate_limited_step_is_retried_and_succeeds(agents: Client, server: FakeOpenAI) -> None:
    server.script("alpha", Reply(status=429, error="slow down", headers={"Retry-After": "0.2"}), text("hi!"))
    result = agents.post_message(MAIN, "hello", timeout_seconds=60)
    assert isinstance(result, SendResult)
    assert result.reply == "hi!"
    assert len(server.bodies("alpha")) == 2


def test_one_worker_slot_is_enough_for_an_agent_that_waits_on_another(fresh: Fresh) -> None:
    """Agent A waits for agent B's reply; with one process of concurrency 1, a waiting tool call that held
    its slot would starve B's run and both would time out."""
    fresh.start_redis(
        config={
            "session": {"agentToAgent": {"maxPingPongTurns": 0}},
            "agents": {"list": [{"id": "a", "default": True, "model": "script/a"}, {"id": "b"}]},
            "models": {
                "providers": {
                    "script": {
                        "type": "script",
                        "models": ["a"],
                        "rules": [
                            {
                                "match": "^ask b$",
                                "tool": {
                                    "name": "sessions_send",
                                    "args": {
                                        "sessionKey": "agent:b:main",
                                        "message": "ping",
                                        "timeoutSeconds": 60,
                                    },
                                },
                            },
                            {"match": '"reply": "echo: ping"', "reply": "b answered"},
                        ],
                    }
                }
            },
        }
    )
    fresh.worker(concurrency=1)
    _role, url = fresh.api()
    with Client(url, TOKEN) as client:
        result = client.post_message("agent:a:main", "ask b", timeout_seconds=60)
        assert isinstance(result, SendResult)
        assert result.status == "ok", result
        assert result.reply == "b answered"
        b_history = client.sessions_history("agent:b:main", caller="agent:a:main").wire()["messages"]
        assert [text_of(m) for m in b_history[:2]] == ["ping", "echo: ping"]
