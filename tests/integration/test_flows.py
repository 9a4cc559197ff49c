"""The agent-to-agent exchange through real workers: Celery tasks run -> reply_turn -> announce -> deliver."""

from __future__ import annotations

from dataclasses import dataclass

from clawbus_client import Client
from clawbus_client.models import SendResult, SessionsHistoryResult

from clawbus.shared.tools.history_view import run_of, text_of
from tests.support.exchanges import chat, finished, unique
from tests.support.processes import wait_for
from tests.support.stack import TOKEN, Fresh


@dataclass(frozen=True)
class Exchange:
    sent: SendResult
    flow_id: str
    requester: str
    target: str
    recipient: str  # the target's webchat recipient: where its announce is delivered


def start_exchange(
    client: Client, requester_agent: str, target_agent: str, message: str, timeout_seconds: float = 0
) -> Exchange:
    """Two sessions people have written in (so both exist and have a route), then a send between them."""
    requester, ann = unique(requester_agent)
    target, bob = unique(target_agent)
    chat(client, requester, ann)
    chat(client, target, bob)
    sent = client.sessions_send(target, message, timeout_seconds=timeout_seconds, caller=requester)
    assert isinstance(sent, SendResult)
    assert sent.flow_id is not None
    return Exchange(sent, sent.flow_id, requester, target, bob)


def history(client: Client, key: str) -> list[dict[str, object]]:
    result = client.sessions_history(key, limit=1000)
    assert isinstance(result, SessionsHistoryResult)
    return result.messages


def test_two_turns_then_announce_and_exactly_one_delivery(client: Client) -> None:
    ex = start_exchange(client, "main", "research", "ping", timeout_seconds=20)
    assert (ex.sent.status, ex.sent.reply, ex.flow_id) == ("ok", "echo: ping", ex.sent.run_id)
    flow = finished(client, ex.flow_id)
    assert [(s.step, s.turn, s.session_key, s.status) for s in flow.steps] == [
        ("run", None, ex.target, "ok"),
        ("reply_turn", 1, ex.requester, "ok"),
        ("reply_turn", 2, ex.target, "ok"),
        ("announce", None, ex.target, "ok"),
        ("deliver", None, ex.target, "delivered"),
    ]
    assert (flow.stop_reason, flow.delivery_status) == ("max turns", "delivered")
    turn_one = history(client, ex.requester)[2]
    assert turn_one["content"] == "echo: ping"
    assert turn_one["provenance"] == {
        "kind": "inter_session",
        "sourceSessionKey": ex.target,
        "sourceChannel": "webchat",
        "sourceTool": "sessions_send",
        "sourceRunId": ex.flow_id,
    }
    target_side = history(client, ex.target)[2:]
    assert [text_of(m) for m in target_side] == [  # type: ignore[index]
        "ping",
        "echo: ping",
        "echo: echo: ping",
        "echo: echo: echo: ping",
        # The announce step's prompt is not shown, as the release never writes it into a transcript.
        "echo: Agent-to-agent announce step.",
    ]
    # Every message the exchange put into the target's transcript names the requester as its source.
    turn_one_run = flow.steps[1].run_id
    from_requester = {"kind": "inter_session", "sourceSessionKey": ex.requester, "sourceChannel": "webchat"}
    primary, turn_two = target_side[0], target_side[2]
    assert primary["provenance"] == {**from_requester, "sourceTool": "sessions_send"}
    assert turn_two["provenance"] == {
        **from_requester,
        "sourceTool": "sessions_send",
        "sourceRunId": turn_one_run,
    }
    # The target's own replies, the announce's among them.
    assert all("provenance" not in m for m in (target_side[1], target_side[3], target_side[4]))
    delivered = client.channel_messages("webchat", ex.recipient)
    assert [m["text"] for m in delivered] == ["echo: Agent-to-agent announce step."]
    assert delivered[0]["flowId"] == ex.flow_id


def test_reply_skip_on_turn_two_stops_the_loop_and_the_announce_still_runs(client: Client) -> None:
    flow = finished(client, start_exchange(client, "main", "scripted", "stop-at-2").flow_id)
    assert [(s.step, s.turn) for s in flow.steps] == [
        ("run", None),
        ("reply_turn", 1),
        ("reply_turn", 2),
        ("announce", None),
    ]
    assert flow.steps[2].reply == "REPLY_SKIP"
    assert flow.steps[3].status == "ok"
    assert flow.stop_reason == "REPLY_SKIP"


def test_a_failed_reply_turn_is_followed_by_the_announce(client: Client) -> None:
    flow = finished(client, start_exchange(client, "main", "scripted", "fail-turn").flow_id)
    assert [(s.step, s.turn, s.status) for s in flow.steps] == [
        ("run", None, "ok"),
        ("reply_turn", 1, "ok"),
        ("reply_turn", 2, "error"),
        ("announce", None, "ok"),
    ]
    assert flow.stop_reason == "reply turn 2 ended with status error"
    assert (flow.error, flow.delivery_status) == (None, "skipped")  # the scripted target stays silent


def test_announce_skip_gives_no_delivery(client: Client) -> None:
    ex = start_exchange(client, "main", "scripted", "anything")
    flow = finished(client, ex.flow_id)
    assert flow.steps[-1].step == "announce"
    assert flow.steps[-1].reply == "ANNOUNCE_SKIP"
    assert (flow.delivery_status, flow.delivery) == ("skipped", None)
    assert client.channel_messages("webchat", ex.recipient) == []


def test_fire_and_forget_runs_the_same_flow(client: Client) -> None:
    ex = start_exchange(client, "main", "research", "no wait")
    assert ex.sent.status == "accepted"
    flow = finished(client, ex.flow_id)
    assert [s.step for s in flow.steps] == ["run", "reply_turn", "reply_turn", "announce", "deliver"]
    assert flow.delivery_status == "delivered"


def test_max_ping_pong_turns_zero_goes_straight_to_the_announce(fresh: Fresh) -> None:
    fresh.start_redis(config={"session": {"agentToAgent": {"maxPingPongTurns": 0}}})
    fresh.worker(concurrency=2)
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        flow = finished(client, start_exchange(client, "main", "research", "hi", timeout_seconds=10).flow_id)
        assert [s.step for s in flow.steps] == ["run", "announce", "deliver"]
        assert (flow.loop_skipped, flow.delivery_status) == ("maxPingPongTurns is 0", "delivered")


def test_a_worker_killed_in_a_reply_turn_leaves_a_flow_that_finishes_once(fresh: Fresh) -> None:
    fresh.start_redis()
    doomed = fresh.worker(concurrency=2)
    fresh.beat()
    _, url = fresh.api()
    with Client(url, TOKEN) as client:
        requester, ann = unique("slow")  # turn 1 is the requester's: 3 s, time to kill the worker in it
        target, bob = unique("main")
        chat(client, requester, ann)
        chat(client, target, bob)
        sent = client.sessions_send(target, "survive", timeout_seconds=0, caller=requester)
        assert isinstance(sent, SendResult)
        assert sent.flow_id is not None
        flow_id = sent.flow_id
        wait_for(
            lambda: [s.status for s in client.get_flow(flow_id).steps if s.turn == 1] == ["running"],
            30,
            what="reply turn 1 to be running",
        )
        doomed.kill()
        fresh.worker(concurrency=2)
        flow = finished(client, flow_id, timeout=60)
        assert [(s.step, s.turn, s.status) for s in flow.steps] == [
            ("run", None, "ok"),
            ("reply_turn", 1, "ok"),
            ("reply_turn", 2, "ok"),
            ("announce", None, "ok"),
            ("deliver", None, "delivered"),
        ]
        turn_one = [m for m in history(client, requester) if run_of(m) == flow.steps[1].run_id]
        assert [m["role"] for m in turn_one] == ["assistant", "assistant"]  # the turn ran once
        assert len(client.channel_messages("webchat", bob)) == 1
        assert client.get_run(flow.steps[1].run_id or "").attempts == 2
