"""shared/adapters/runtimes/remote.py: ``a2a:<remoteId>`` names the caller's session with a configured remote A2A agent, whose
model is ``a2a/<remoteId>``; a remote that serves no agent card fails the step with that reason. (The
runtime against a real A2A server: tests/integration/test_a2a.py.)"""

from __future__ import annotations

import pytest

from clawbus.api.processes import free_port
from clawbus.shared.adapters.runtimes.remote import A2ARuntime, RemoteFailed, model_ref, target_key
from clawbus.shared.config import A2ARemote, Config
from clawbus.shared.ports.runtime import StepRequest
from clawbus.shared.wire.models import Message
from tests.conftest import make_config


@pytest.fixture
def config() -> Config:
    return make_config(
        {
            "a2a": {
                "remotes": [
                    {"id": "far", "url": "https://far.example"},
                    {"id": "Near-2", "url": "https://near.example"},
                ]
            }
        }
    )


@pytest.mark.parametrize(
    ("caller", "raw", "key"),
    [
        ("main", "a2a:far", "agent:main:a2a-remote:far"),
        ("main", " A2A:FAR ", "agent:main:a2a-remote:far"),
        ("research", "a2a:near-2", "agent:research:a2a-remote:near-2"),
        ("main", "a2a:Near-2", "agent:main:a2a-remote:near-2"),
    ],
)
def test_a2a_and_a_configured_remote_names_the_callers_session_with_it(
    config: Config, caller: str, raw: str, key: str
) -> None:
    assert target_key(config, caller, raw) == key


@pytest.mark.parametrize("raw", ["a2a:gone", "a2a:", "a2a:far:x"])
def test_a2a_and_an_unconfigured_remote_names_no_remote(config: Config, raw: str) -> None:
    assert target_key(config, "main", raw) is None


@pytest.mark.parametrize(
    "raw", ["far", "main", "agent:main:a2a-remote:far", "agent:main:a2a:far", "discord:group:far", "a2a-far"]
)
def test_a_key_that_is_not_a2a_colon_something_names_no_remote(config: Config, raw: str) -> None:
    assert target_key(config, "main", raw) is None


def test_with_no_remotes_configured_a2a_keys_name_no_remote() -> None:
    assert target_key(make_config(), "main", "a2a:far") is None


def test_a_remote_sessions_model_is_a2a_slash_its_remote(config: Config) -> None:
    key = target_key(config, "main", "a2a:far")
    assert key is not None
    assert model_ref(key) == "a2a/far"
    assert config.a2a_remote(model_ref(key)).url == "https://far.example"


def test_a_remote_that_serves_no_agent_card_fails_the_step_saying_so() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    runtime = A2ARuntime(A2ARemote(id="far", url=url))
    asked = Message.model_validate(
        {"id": "m1", "role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1}
    )
    request = StepRequest(agent_id="main", model="a2a/far", session=None, messages=[asked])
    with pytest.raises(RemoteFailed) as caught:
        runtime.step(request)
    assert str(caught.value).startswith(f"A2A remote far: no agent card at {url}: ")
