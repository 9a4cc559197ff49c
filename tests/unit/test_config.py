"""shared/config/: defaults, OpenClaw key names, and one message naming every bad field."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from clawbus.shared.config import THREADS_PER_WORKER, ChatChannel, Config, ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "clawbus.json5"
    path.write_text(text)
    return path


def test_no_file_at_all_gives_working_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = load_config(env={})
    assert config.default_agent.id == "main"
    assert config.session.main_key == "main"
    assert config.tools.sessions.visibility == "tree"
    assert config.session.agent_to_agent.max_ping_pong_turns == 5
    assert config.model_of("main") == "echo/echo"


def test_the_shipped_example_loads_with_main_as_default_and_research() -> None:
    config = load_config(REPO / "clawbus.example.json5", env={})
    assert config.default_agent.id == "main"
    assert config.agent("research") is not None


def test_json5_features_are_accepted(tmp_path: Path) -> None:
    path = write(
        tmp_path, "// comment\n{session: {mainKey: 'home',}, agents: {list: [{id: 'ops', default: true}]}}"
    )
    config = load_config(path, env={})
    assert config.session.main_key == "home"
    assert config.default_agent.id == "ops"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The release's path and wording (openclaw config validate --json, 2026.9.6).
        ("{agents: {entries: {'Bad Id': {}}}}", "agents.entries.Bad Id: Invalid key in record"),
        ("{session: {maiKey: 'x'}}", 'session: Unrecognized key: "maiKey"'),
        ("{gateway: {port: 'eighty'}}", "gateway.port: Invalid input: expected number, received string"),
        ("{session: {scope: 'per-room'}}", 'session.scope: Invalid input (allowed: "per-sender", "global")'),
        (
            "{session: {sendPolicy: {rules: [{action: 'maybe'}]}}}",
            'session.sendPolicy.rules.0.action: Invalid input (allowed: "allow", "deny")',
        ),
        (
            "{channels: {slack: {botToken: 't', dmPolicy: 'sometimes'}}}",
            'channels.slack.dmPolicy: invalid config: must be equal to one of the allowed values (allowed: "pairing"',
        ),
        (
            "{session: {sendPolicy: {rules: [{action: 'deny', match: {channel: 'a', provider: 'b'}}]}}}",
            'session.sendPolicy.rules.0.match: Unrecognized key: "provider"',
        ),
        (
            "{agents: {entries: {a: {}, b: {}}}}",
            'agents.ownership: multi-agent rosters require agents.ownership="explicit" or one legacy '
            "default=true marker",
        ),
        (
            "{bindings: [{agentId: 'ops', match: {channel: 'discord'}}]}",
            'bindings.0.agentId: Unknown agent id "ops" (not in agents.entries).',
        ),
        (
            "{agents: {list: [{id: 'a', default: true}, {id: 'b', default: true}]}}",
            "or one legacy default=true marker",
        ),
        # clawbus's own settings (a slack bot binds no threads), in its words.
        (
            "{channels: {slack: {botToken: 't', threadBindings: {idleHours: 1}}}}",
            "channels.slack: threadBindings: discord threads and telegram topics bind, not slack",
        ),
        ("{redis: {prefx: 'x'}}", "redis.prefx: unknown setting"),
        (
            "{channels: {ops: {type: 'slack', botToken: 'x', baseUrl: 'ftp://x'}}}",
            "channels.ops.baseUrl: must be",
        ),
    ],
)
def test_a_bad_field_is_named_by_its_path(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env={})
    assert expected in str(caught.value)
    assert str(tmp_path) in str(caught.value)


def test_a_file_that_is_not_json5_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid JSON5"):
        load_config(write(tmp_path, "{ nope"), env={})


def test_a_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(tmp_path / "absent.json5", env={})


def test_ping_pong_turns_are_clamped_to_0_to_5(tmp_path: Path) -> None:
    high = load_config(write(tmp_path, "{session: {agentToAgent: {maxPingPongTurns: 9}}}"), env={})
    low = load_config(write(tmp_path, "{session: {agentToAgent: {maxPingPongTurns: -3}}}"), env={})
    assert high.session.agent_to_agent.max_ping_pong_turns == 5
    assert low.session.agent_to_agent.max_ping_pong_turns == 0


@pytest.mark.parametrize("given", ["ALL", "bogus"])
def test_a_visibility_the_release_does_not_list_is_refused_in_its_words(tmp_path: Path, given: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, f"{{tools: {{sessions: {{visibility: '{given}'}}}}}}"), env={})
    assert 'tools.sessions.visibility: Invalid option: expected one of "self"|"tree"|"agent"|"all"' in str(
        caught.value
    )


@pytest.mark.parametrize(("given", "used"), [("ALL", "all"), (" Agent ", "agent"), ("bogus", "tree")])
def test_visibility_set_in_code_is_case_insensitive_and_falls_back_to_tree(given: str, used: str) -> None:
    config = Config.model_validate({"tools": {"sessions": {"visibility": given}}})
    assert config.tools.sessions.visibility == used


def test_environment_overrides_redis_and_adds_tokens(tmp_path: Path) -> None:
    path = write(tmp_path, "{gateway: {auth: {tokens: ['from-file']}}}")
    env = {
        "CLAWBUS_REDIS_URL": "redis://10.0.0.1:6390/2",
        "CLAWBUS_API_TOKENS": "a, b",
        "CLAWBUS_REDIS_PREFIX": "x:",
    }
    config = load_config(path, env=env)
    assert config.redis.url == "redis://10.0.0.1:6390/2"
    assert config.redis.prefix == "x:"
    [from_file, *from_env] = config.gateway.auth.tokens
    assert from_file == "from-file"
    # Environment tokens are operators, and only their digests are kept.
    assert [(t.name, t.sha256, t.token, t.agents, t.owner) for t in from_env] == [  # type: ignore[union-attr]
        ("env-0", hashlib.sha256(b"a").hexdigest(), None, ["*"], True),
        ("env-1", hashlib.sha256(b"b").hexdigest(), None, ["*"], True),
    ]


def test_workers_default_to_a_threads_pool_sized_for_model_calls() -> None:
    worker = Config().worker
    assert (worker.pool, worker.pool_size()) == ("threads", THREADS_PER_WORKER)
    assert worker.pool_size("solo") == 1
    assert worker.pool_size("prefork") == os.cpu_count()
    assert Config.model_validate({"worker": {"concurrency": 12}}).worker.pool_size("prefork") == 12


def test_the_environment_sets_the_worker_pool_and_its_size(tmp_path: Path) -> None:
    path = write(tmp_path, "{}")
    config = load_config(path, env={"CLAWBUS_WORKER_POOL": "prefork", "CLAWBUS_WORKER_CONCURRENCY": "3"})
    assert (config.worker.pool, config.worker.pool_size()) == ("prefork", 3)


def test_a_bad_worker_pool_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"worker\.pool"):
        load_config(write(tmp_path, "{}"), env={"CLAWBUS_WORKER_POOL": "gevent"})


def test_flow_and_announce_bounds_have_defaults_and_are_checked(tmp_path: Path) -> None:
    config = Config()
    assert config.session.agent_to_agent.flow_timeout_seconds == 3600
    assert config.agents.defaults.subagents.announce_timeout_seconds == 60
    with pytest.raises(ConfigError, match=r"session\.agentToAgent\.flowTimeoutSeconds"):
        load_config(write(tmp_path, "{session: {agentToAgent: {flowTimeoutSeconds: 0}}}"), env={})


def test_config_path_comes_from_clawbus_config(tmp_path: Path) -> None:
    path = write(tmp_path, "{agents: {list: [{id: 'solo'}]}}")
    assert load_config(env={"CLAWBUS_CONFIG": str(path)}).default_agent.id == "solo"


def test_any_setting_can_come_from_the_environment_over_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "{runs: {leaseSeconds: 30, maxAttempts: 5}, redis: {prefix: 'file:'}}")
    env = {"CLAWBUS_RUNS_LEASE_SECONDS": "7.5", "CLAWBUS_REDIS_URL": "redis://10.0.0.9:6390/0"}
    config = load_config(path, env=env)
    assert (config.runs.lease_seconds, config.runs.max_attempts) == (7.5, 5)  # the rest of runs stays
    assert (config.redis.url, config.redis.prefix) == ("redis://10.0.0.9:6390/0", "file:")


def test_a_bad_value_in_the_environment_is_named_by_its_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"runs\.leaseSeconds: Input should be a valid number"):
        load_config(write(tmp_path, "{}"), env={"CLAWBUS_RUNS_LEASE_SECONDS": "soon"})


def test_variables_of_other_programs_are_not_read(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, "{}"), env={"REDIS_URL": "redis://elsewhere:1/0", "LOGGING_LEVEL": "x"}
    )
    assert config.redis.url == "redis://127.0.0.1:6379/0"


def test_sentinel_hosts_and_master_come_from_the_environment_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json5"
    path.write_text('{redis: {sentinel: {hosts: ["10.0.0.9:26379"], master: "filed", password: "pw"}}}')
    env = {
        "CLAWBUS_REDIS_SENTINELS": "10.0.0.1:26379, 10.0.0.2:26380",
        "CLAWBUS_REDIS_SENTINEL_MASTER": "prod",
    }
    redis = load_config(path, env).redis
    assert redis.sentinel is not None
    assert redis.sentinel.hosts == ["10.0.0.1:26379", "10.0.0.2:26380"]
    assert (redis.sentinel.master, redis.sentinel.password) == ("prod", "pw")
    assert redis.acks_wanted == 1  # under Sentinel an accept waits for a replica unless told otherwise


def test_a_sentinel_master_without_sentinels_leaves_one_redis(tmp_path: Path) -> None:
    """What compose passes by default: no sentinels, the master's name for when there are."""
    env = {"CLAWBUS_REDIS_SENTINELS": "", "CLAWBUS_REDIS_SENTINEL_MASTER": "clawbus"}
    assert load_config(None, env).redis.sentinel is None
    path = tmp_path / "c.json5"
    path.write_text('{redis: {sentinel: {hosts: ["10.0.0.9:26379"]}}}')
    sentinel = load_config(path, env).redis.sentinel
    assert sentinel is not None
    assert (sentinel.hosts, sentinel.master) == (["10.0.0.9:26379"], "clawbus")


def test_a_single_redis_acknowledges_accepts_without_replicas_unless_told_to_wait() -> None:
    assert Config().redis.acks_wanted == 0
    assert Config.model_validate({"redis": {"replicaAcks": 2}}).redis.acks_wanted == 2


@pytest.mark.parametrize("hosts", ["nohost", "h:port", "h:70000", ":26379"])
def test_a_sentinel_address_that_is_not_host_port_is_named(hosts: str) -> None:
    with pytest.raises(ConfigError, match=r"redis\.sentinel\.hosts\[0\]: .* is not host:port"):
        load_config(None, {"CLAWBUS_REDIS_SENTINELS": hosts})


def test_each_chat_channel_talks_to_its_platforms_api_unless_told_otherwise(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            "{channels: {telegram: {botToken: 't'}, discord: {botToken: 'd'},"
            " ops: {type: 'slack', botToken: 's', baseUrl: 'http://127.0.0.1:9/api/'}}}",
        ),
        env={},
    )
    urls = {name: spec.api_url for name, spec in config.channels.items() if isinstance(spec, ChatChannel)}
    assert urls == {
        "telegram": "https://api.telegram.org",
        "discord": "https://discord.com/api/v10",
        "ops": "http://127.0.0.1:9/api",
    }
