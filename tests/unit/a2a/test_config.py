"""shared/config/a2a.py and its checks in shared/config/settings.py: which agents answer A2A clients, and the
remote A2A agents clawbus's own agents may message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from clawbus.shared.config import A2ARemote, Config, ConfigError, load_config
from clawbus.shared.config.a2a import A2AConfig
from clawbus.shared.config.providers import UnknownModel
from tests.conftest import make_config

INVALID_ID = '1-64 of a-z, 0-9, "_" and "-", starting alphanumeric'


def with_a2a(a2a: dict[str, Any]) -> Config:
    return make_config({"a2a": a2a})


def test_no_agent_is_exposed_and_no_remote_configured_by_default() -> None:
    config = make_config()
    assert config.a2a.expose == []
    assert not config.a2a.exposes("main")
    assert config.a2a.remotes == []
    assert config.a2a.public_url is None


def test_exposed_agents_are_lowercased_and_only_they_are_exposed() -> None:
    a2a = A2AConfig.model_validate({"expose": [" Main ", "RESEARCH"]})
    assert a2a.expose == ["main", "research"]
    assert a2a.exposes("main")
    assert a2a.exposes("research")
    assert not a2a.exposes("lead")


def test_a_star_exposes_every_agent() -> None:
    a2a = A2AConfig.model_validate({"expose": ["*"]})
    assert a2a.exposes("main")
    assert a2a.exposes("anyone")


def test_an_exposed_agent_must_be_configured() -> None:
    with pytest.raises(ValidationError) as caught:
        with_a2a({"expose": ["main", "Ghost"]})
    assert "a2a.expose: unknown agent ghost (configured: main, research)" in str(caught.value)


def test_exposing_configured_agents_or_every_agent_is_valid() -> None:
    assert with_a2a({"expose": ["MAIN", "research"]}).a2a.exposes("research")
    assert with_a2a({"expose": ["*"]}).a2a.exposes("main")


def test_a_remote_is_named_by_its_lowercased_id() -> None:
    config = with_a2a({"remotes": [{"id": " Far-Agent_2 ", "url": "https://far.example/a2a"}]})
    [remote] = config.a2a.remotes
    assert remote.id == "far-agent_2"
    assert config.a2a.remote("far-agent_2") is remote
    assert config.a2a.remote("near") is None


@pytest.mark.parametrize("bad", ["bad id", "-far", "_far", "", "far:1", "far.agent", "x" * 65, "fär"])
def test_an_invalid_remote_id_is_refused_with_what_an_id_may_be(bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        A2ARemote.model_validate({"id": bad, "url": "https://far.example"})
    assert f'invalid remote id "{bad}": {INVALID_ID}' in str(caught.value)


def test_remote_ids_must_be_unique_whatever_their_case() -> None:
    remotes = [
        {"id": "far", "url": "https://one.example"},
        {"id": "FAR", "url": "https://two.example"},
        {"id": "near", "url": "https://three.example"},
        {"id": "near", "url": "https://four.example"},
        {"id": "other", "url": "https://five.example"},
    ]
    with pytest.raises(ValidationError) as caught:
        with_a2a({"remotes": remotes})
    assert "remote ids must be unique: far, near" in str(caught.value)


@pytest.mark.parametrize("url", ["ftp://far.example", "far.example", "https://", ""])
def test_a_remote_url_must_be_http(url: str) -> None:
    with pytest.raises(ValidationError, match="must be an http:// or https:// URL"):
        A2ARemote.model_validate({"id": "far", "url": url})


@pytest.mark.parametrize("seconds", [0, -1, 86_401])
def test_a_remote_timeout_is_above_zero_and_at_most_a_day(seconds: float) -> None:
    with pytest.raises(ValidationError, match="timeoutSeconds"):
        A2ARemote.model_validate({"id": "far", "url": "https://far.example", "timeoutSeconds": seconds})


def test_a_remote_waits_five_minutes_and_sends_no_token_by_default() -> None:
    remote = A2ARemote.model_validate({"id": "far", "url": "https://far.example"})
    assert remote.timeout_seconds == 300
    assert remote.token_env is None


def test_a_session_model_names_its_configured_remote() -> None:
    config = with_a2a({"remotes": [{"id": "far", "url": "https://far.example"}]})
    assert config.a2a_remote("a2a/far").url == "https://far.example"


def test_an_unconfigured_remote_is_an_unknown_model_naming_the_configured_ones() -> None:
    config = with_a2a(
        {"remotes": [{"id": "far", "url": "https://far.example"}, {"id": "near", "url": "https://n.example"}]}
    )
    with pytest.raises(
        UnknownModel, match=r"^unknown A2A remote: a2a/gone \(configured remotes: far, near\)$"
    ):
        config.a2a_remote("a2a/gone")


def test_with_no_remotes_any_remote_is_an_unknown_model() -> None:
    with pytest.raises(UnknownModel, match=r"unknown A2A remote: a2a/far \(configured remotes: none\)"):
        make_config().a2a_remote("a2a/far")


def test_the_a2a_section_loads_from_a_file_in_openclaw_case(tmp_path: Path) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text(
        "{a2a: {expose: ['Main'], publicUrl: 'https://bus.example/', remotes: [{id: 'Far', "
        "url: 'http://far.example:9000', tokenEnv: 'FAR_TOKEN', timeoutSeconds: 30}]}}"
    )
    config = load_config(path, env={})
    assert config.a2a.exposes("main")
    assert config.a2a.public_url == "https://bus.example/"
    [remote] = config.a2a.remotes
    assert (remote.id, remote.url, remote.token_env, remote.timeout_seconds) == (
        "far",
        "http://far.example:9000",
        "FAR_TOKEN",
        30,
    )


def test_a_bad_a2a_file_names_the_setting(tmp_path: Path) -> None:
    path = tmp_path / "clawbus.json5"
    path.write_text("{a2a: {expose: ['nobody']}}")
    with pytest.raises(ConfigError, match=r"a2a\.expose: unknown agent nobody"):
        load_config(path, env={})
