"""shared/config/openclaw_file.py: an ``openclaw.json`` of the pinned release read as clawbus's configuration,
each setting honoured or reported, what the release refuses refused in its words."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawbus.shared.config import ConfigError, Notice, load_config, validate_config

# The configuration a migrating user brings: `openclaw config validate --json` (2026.9.6) calls it valid.
MIGRATING = """{
  agents: { defaults: { subagents: { maxSpawnDepth: 3 } }, entries: { main: { default: true }, research: {} } },
  session: { dmScope: "per-channel-peer" },
  messages: { ackReaction: "👀", queue: { mode: "collect" } },
}"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "openclaw.json"
    path.write_text(text, encoding="utf-8")
    return path


def warnings_of(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> dict[str, str]:
    config, validation = validate_config(write(tmp_path, text), env=env or {})
    assert config is not None, validation.issues
    return {notice.path: notice.message for notice in validation.warnings}


def test_a_release_config_starts_clawbus_unchanged(tmp_path: Path) -> None:
    config, validation = validate_config(write(tmp_path, MIGRATING), env={})
    assert config is not None
    assert config.agent_ids() == ["main", "research"]
    assert config.default_agent.id == "main"
    assert config.agents.defaults.subagents.max_spawn_depth == 3
    assert config.messages.queue.mode == "collect"
    assert [notice.path for notice in validation.warnings] == ["session.dmScope", "messages.ackReaction"]
    assert all(notice.message.startswith("not used by clawbus: ") for notice in validation.warnings)


def test_the_legacy_agent_list_is_moved_to_entries_as_the_release_says(tmp_path: Path) -> None:
    warnings = warnings_of(tmp_path, "{agents: {list: [{id: 'ops', default: true}, {id: 'qa'}]}}")
    assert warnings == {"agents.entries": "Moved agents.list to keyed agents.entries."}
    assert load_config(write(tmp_path, "{agents: {list: [{id: 'ops'}]}}"), env={}).agent_ids() == ["ops"]


def test_an_empty_roster_is_the_implicit_main_agent(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "{agents: {entries: {}}}"), env={}).agent_ids() == ["main"]


def test_variables_are_substituted_escaped_and_a_missing_one_is_said(tmp_path: Path) -> None:
    text = "{gateway: {auth: {token: '${GW_TOKEN}'}}, session: {store: '$${HOME}/x'}, redis: {prefix: '${NOPE}:'}}"
    config, validation = validate_config(write(tmp_path, text), env={"GW_TOKEN": "t" * 24})
    assert config is not None
    assert config.session.store == "${HOME}/x"
    assert config.redis.prefix == "${NOPE}:"
    assert validation.warnings == [
        Notice("redis.prefix", 'Missing env var "NOPE" - feature using this value will be unavailable')
    ]


def test_the_gateway_token_is_an_operator_token(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, "{gateway: {auth: {mode: 'token', token: 'secret-token-1234'}}}"), env={}
    )
    assert "secret-token-1234" in config.gateway.auth.tokens


@pytest.mark.parametrize(
    ("gateway", "bound"),
    [
        ("{bind: 'loopback'}", "127.0.0.1"),
        ("{bind: 'lan'}", "0.0.0.0"),
        ("{bind: 'custom', customBindHost: '10.1.2.3'}", "10.1.2.3"),
        ("{bind: '127.0.0.2'}", "127.0.0.2"),
    ],
)
def test_the_releases_bind_modes_are_addresses(tmp_path: Path, gateway: str, bound: str) -> None:
    assert load_config(write(tmp_path, f"{{gateway: {gateway}}}"), env={}).gateway.bind == bound


def test_an_openai_completions_provider_is_called_with_its_key(tmp_path: Path) -> None:
    text = """{models: {providers: {local: {baseUrl: 'http://127.0.0.1:9/v1', api: 'openai-completions',
      apiKey: '${LOCAL_KEY}', models: [{id: 'm1', name: 'M1'}]}}},
      agents: {defaults: {model: {primary: 'local/m1', fallbacks: ['echo/echo']}}}}"""
    config = load_config(write(tmp_path, text), env={"LOCAL_KEY": "sk-local"})
    provider, model = config.provider("local/m1")
    assert (provider.api_key(), model) == ("sk-local", "m1")  # type: ignore[union-attr]
    assert config.models_of("main") == ["local/m1", "echo/echo"]
    assert config.model_of("main") == "local/m1"


def test_a_provider_clawbus_cannot_call_is_reported_and_left_out(tmp_path: Path) -> None:
    text = """{models: {providers: {claude: {baseUrl: 'https://api.anthropic.com', api: 'anthropic-messages',
      models: [{id: 'opus', name: 'Opus'}]}}}, agents: {defaults: {model: 'claude/opus'}}}"""
    config, validation = validate_config(write(tmp_path, text), env={})
    assert config is not None
    assert "claude" not in config.models.providers
    warnings = {notice.path: notice.message for notice in validation.warnings}
    assert warnings["models.providers.claude"].endswith('not "anthropic-messages"')
    assert warnings["agents.defaults.model"].startswith('model "claude/opus" is not one clawbus can call')


def test_clawbus_own_settings_are_neither_refused_nor_reported(tmp_path: Path) -> None:
    text = "{redis: {prefix: 'cb:'}, runs: {leaseSeconds: 20}, session: {hotMessages: 50}, a2a: {expose: []}}"
    assert warnings_of(tmp_path, text) == {}


def test_a_channel_clawbus_has_no_adapter_for_is_reported_once(tmp_path: Path) -> None:
    text = "{channels: {whatsapp: {dmPolicy: 'open', allowFrom: ['*']}, telegram: {botToken: 't', dmPolicy: 'open'}}}"
    config, validation = validate_config(write(tmp_path, text), env={})
    assert config is not None
    assert list(config.channels) == ["telegram"]
    assert [notice.path for notice in validation.warnings] == [
        "channels.whatsapp",
        "channels.telegram.dmPolicy",
    ]


def test_an_agents_identity_name_names_it_and_skill_names_are_reported(tmp_path: Path) -> None:
    text = "{agents: {entries: {main: {identity: {name: 'Samantha', emoji: '🦥'}, skills: ['docs-search']}}}}"
    config, validation = validate_config(write(tmp_path, text), env={})
    assert config is not None
    main = config.agent("main")
    assert main is not None
    assert main.display_name == "Samantha"
    assert main.skills == []
    assert {n.path for n in validation.warnings} == {
        "agents.entries.main.identity.emoji",
        "agents.entries.main.skills",
    }


@pytest.mark.parametrize(("level", "used"), [("high", "high"), ("xhigh", "high"), ("adaptive", None)])
def test_a_thinking_default_is_the_nearest_level_clawbus_has(
    tmp_path: Path, level: str, used: str | None
) -> None:
    text = f"{{agents: {{entries: {{main: {{thinkingDefault: '{level}'}}}}}}}}"
    assert load_config(write(tmp_path, text), env={}).thinking_default("main") == used


def test_what_the_release_refuses_is_refused_with_its_paths(tmp_path: Path) -> None:
    text = "{agents: {defaults: {subagents: {maxSpawnDepth: 9}}}, session: {dmScope: 3, bogus: 1}}"
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env={})
    assert str(caught.value).splitlines()[1:] == [
        "  agents.defaults.subagents.maxSpawnDepth: Too big: expected number to be <=5 (maximum: 5)",
        '  session: Unrecognized key: "bogus"',
        '  session.dmScope: Invalid option: expected one of "main"|"per-peer"|"per-channel-peer"|"per-account-channel-peer"',
    ]


def test_a_primary_clawbus_cannot_call_falls_back_to_the_first_it_can(tmp_path: Path) -> None:
    text = "{agents: {defaults: {model: {primary: 'anthropic/claude-opus-4-6', fallbacks: ['echo/echo']}}}}"
    config = load_config(write(tmp_path, text), env={})
    assert config.model_of("main") == "anthropic/claude-opus-4-6"
    assert config.run_model("main") == "echo/echo"


def test_an_agents_a2a_skills_are_clawbus_own_beside_the_releases_skill_names(tmp_path: Path) -> None:
    text = "{agents: {entries: {main: {skills: ['docs-search', {id: 'answer', name: 'Answers'}]}}}}"
    config, validation = validate_config(write(tmp_path, text), env={})
    assert config is not None
    main = config.agent("main")
    assert main is not None
    assert [skill.id for skill in main.skills] == ["answer"]
    assert [notice.path for notice in validation.warnings] == ["agents.entries.main.skills"]
