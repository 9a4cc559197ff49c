"""shared/domain/chains.py: a chain's hops and path, its guards, and how a report and a reply-back turn
carry it (docs/contract.md §4, "Chains")."""

from __future__ import annotations

import json

import pytest

from clawbus.shared.domain import chains
from clawbus.shared.domain.chains import Chain, ChainStopped, Limits
from clawbus.shared.wire.models import RunSpec

MAIN, OPS, RESEARCH = "agent:main:main", "agent:ops:main", "agent:research:main"
GENEROUS = Limits(max_hops=8, max_cycles=1)


def test_a_chain_starts_at_its_session_with_no_hop() -> None:
    assert chains.start("r1", MAIN) == Chain("r1", 0, (MAIN,))


def test_each_hop_adds_one_and_the_target_to_the_path() -> None:
    hop = chains.next_hop(chains.start("r1", MAIN), OPS, GENEROUS)
    assert hop == Chain("r1", 1, (MAIN, OPS))
    assert chains.next_hop(hop, RESEARCH, GENEROUS) == Chain("r1", 2, (MAIN, OPS, RESEARCH))


def test_a_chain_at_max_hops_is_refused_naming_the_guard_and_the_path() -> None:
    at_limit = Chain("r1", 2, (MAIN, OPS, RESEARCH))
    with pytest.raises(ChainStopped) as stopped:
        chains.next_hop(at_limit, "agent:main:cron:x", Limits(max_hops=2, max_cycles=1))
    assert (stopped.value.guard, stopped.value.status) == ("maxHops", "forbidden")
    assert stopped.value.path == [MAIN, OPS, RESEARCH, "agent:main:cron:x"]
    assert stopped.value.error == (
        "agent-to-agent chain stopped: it already has 2 hops (session.agentToAgent.maxHops is 2); "
        "path: main -> ops -> research -> agent:main:cron:x"
    )


def test_coming_back_is_allowed_max_cycles_times_and_refused_after() -> None:
    once_around = Chain("r1", 3, (MAIN, OPS, RESEARCH, MAIN))
    assert chains.next_hop(once_around, OPS, GENEROUS).path[-1] == OPS  # ops is on the path once
    twice_around = Chain("r1", 6, (MAIN, OPS, RESEARCH, MAIN, OPS, RESEARCH, MAIN))
    with pytest.raises(ChainStopped) as stopped:
        chains.next_hop(twice_around, OPS, GENEROUS)
    assert stopped.value.guard == "maxCycles"
    assert "it would come back to ops, already on its path 2 times (session.agentToAgent.maxCycles is 1)" in (
        stopped.value.error
    )
    assert stopped.value.error.endswith(
        "path: main -> ops -> research -> main -> ops -> research -> main -> ops"
    )


def test_max_cycles_zero_refuses_any_way_back() -> None:
    with pytest.raises(ChainStopped):
        chains.next_hop(Chain("r1", 1, (MAIN, OPS)), MAIN, Limits(max_hops=8, max_cycles=0))


def test_the_refusal_result_is_forbidden_with_guard_and_path() -> None:
    with pytest.raises(ChainStopped) as stopped:
        chains.next_hop(Chain("r1", 8, (MAIN,)), OPS, GENEROUS)
    refused = chains.refusal(stopped.value, "run-9")
    assert (refused.status, refused.guard, refused.path, refused.run_id) == (
        "forbidden",
        "maxHops",
        [MAIN, OPS],
        "run-9",
    )


def test_a_report_puts_its_requester_back_where_it_spawned_the_child() -> None:
    child = Chain("r1", 2, (MAIN, OPS, "agent:ops:subagent:c1"))
    back = chains.in_session(chains.back_to_spawner(child), OPS)
    assert back == Chain("r1", 1, (MAIN, OPS))
    # So an orchestrator that spawns round after round stays at one hop past where it was.
    again = chains.next_hop(back, "agent:ops:subagent:c2", GENEROUS)
    assert again.hops == child.hops


def test_a_report_to_a_spawner_further_up_comes_back_to_it() -> None:
    child = Chain("r1", 2, (MAIN, OPS, "agent:ops:subagent:c1"))
    assert chains.in_session(chains.back_to_spawner(child), MAIN).path == (MAIN, OPS, MAIN)


def test_a_reply_turn_in_the_session_the_send_came_from_comes_back_to_it() -> None:
    sent = Chain("r1", 1, (MAIN, OPS))
    assert chains.in_session(sent, OPS) is sent  # the target's own turn: where the send went
    assert chains.in_session(sent, MAIN) == Chain("r1", 1, (MAIN, OPS, MAIN))


def test_a_run_from_before_paths_starts_its_path_at_its_own_session() -> None:
    def run(chain_id: str | None, hops: int, path: list[str] | None) -> RunSpec:
        spec = RunSpec(run_id="r2", session_key=OPS, agent_id="ops", kind="send")
        return spec.model_copy(update={"chain_id": chain_id, "hops": hops, "chain_path": path})

    assert chains.of_run(run("r1", 3, None)) == Chain("r1", 3, (OPS,))
    assert chains.of_run(run(None, 0, [])) == Chain("r2", 0, (OPS,))
    assert chains.of_run(run("r1", 2, [MAIN, OPS])) == Chain("r1", 2, (MAIN, OPS))


def test_paths_show_main_sessions_by_agent_and_the_rest_by_key() -> None:
    assert chains.shown([MAIN, "agent:ops:discord:group:x", "a2a:remote"]) == (
        "main -> agent:ops:discord:group:x -> a2a:remote"
    )


def test_a_chain_travels_to_another_host_and_back_whole() -> None:
    chain = Chain("r1", 2, (MAIN, OPS, RESEARCH))
    assert chains.decode(chains.encode(chain)) == chain
    # A protobuf Struct (an A2A message's metadata) keeps numbers as floats.
    assert chains.decode({**chains.encode(chain), "hops": 2.0}) == chain


@pytest.mark.parametrize(
    "sent",
    [
        None,
        "r1",
        {"chainId": "", "hops": 1, "path": [MAIN]},
        {"chainId": "r1", "hops": -1, "path": [MAIN]},
        {"chainId": "r1", "hops": True, "path": [MAIN]},
        {"chainId": "r1", "hops": 1.5, "path": [MAIN]},
        {"chainId": "r1", "hops": 1, "path": [MAIN, 3]},
    ],
)
def test_anything_else_sent_as_a_chain_starts_none(sent: object) -> None:
    assert chains.decode(sent) is None


def test_a_long_path_from_outside_keeps_its_latest_sessions() -> None:
    path = [f"agent:a{i}:main" for i in range(200)]
    decoded = chains.decode({"chainId": "r1", "hops": 3, "path": path})
    assert decoded is not None
    assert decoded.path == tuple(path[-chains.MAX_PATH :])


def test_a_model_call_sends_the_chains_id_and_hops_and_no_session_keys() -> None:
    sent = chains.header(Chain("r1", 3, (MAIN, OPS)))
    assert json.loads(sent) == {"chainId": "r1", "hops": 3, "path": []}
    # A clawbus serving that call goes on counting from there: the next hop is its first on the path.
    decoded = chains.decode(json.loads(sent))
    assert decoded is not None
    assert chains.next_hop(decoded, RESEARCH, GENEROUS) == Chain("r1", 4, (RESEARCH,))
