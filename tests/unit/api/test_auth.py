"""api/auth.py: principals from gateway.auth.tokens, hashed tokens, 401 vs 403 vs 404, owner-only operations."""

from __future__ import annotations

import hmac
import json
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from clawbus.api.auth import plain_text_tokens, principal_for
from clawbus.shared.config import Config, TokenSpec
from tests.support.scoped_tokens import (  # noqa: F401 (fixtures)
    OPERATOR,
    OWNER,
    RESEARCH,
    as_token,
    hashed,
    scoped_config,
    scoped_http,
)


def send(http: TestClient, token: str, caller: str, target: str = "cron:x") -> int:
    body = {
        "tool": "sessions_send",
        "sessionKey": caller,
        "args": {"sessionKey": target, "message": "m", "timeoutSeconds": 0},
    }
    return http.post("/tools/invoke", json=body, headers=as_token(token)).status_code


def test_a_token_for_research_calling_as_main_is_403_and_as_research_200(http: TestClient) -> None:
    assert send(http, RESEARCH, "main") == 403
    assert send(http, RESEARCH, "agent:research:main") == 200
    response = http.post(
        "/tools/invoke",
        json={"tool": "sessions_list", "sessionKey": "agent:main:cron:x"},
        headers=as_token(RESEARCH),
    )
    assert response.json()["error"] == {
        "type": "forbidden",
        "message": 'this token may not act for agent "main"',
    }


def test_403_does_not_say_whether_the_session_exists(http: TestClient) -> None:
    http.post(
        "/v1/sessions/agent:main:cron:real/messages",
        json={"message": "hi", "timeoutSeconds": 0},
        headers=as_token(OWNER),
    )
    real = http.get("/v1/sessions/agent:main:cron:real", headers=as_token(RESEARCH))
    made_up = http.get("/v1/sessions/agent:main:cron:made-up", headers=as_token(RESEARCH))
    assert (real.status_code, made_up.status_code) == (403, 403)
    assert real.json() == made_up.json()


def test_runs_of_other_agents_are_unknown_to_a_token(http: TestClient) -> None:
    run_id = http.post(
        "/v1/sessions/agent:main:cron:r/messages",
        json={"message": "hi", "timeoutSeconds": 0},
        headers=as_token(OWNER),
    ).json()["runId"]
    assert http.get(f"/v1/runs/{run_id}", headers=as_token(OWNER)).status_code == 200
    assert http.get(f"/v1/runs/{run_id}", headers=as_token(RESEARCH)).json() == {
        "ok": False,
        "error": {"type": "not_found", "message": f"Run not found: {run_id}"},
    }
    assert http.get(f"/v1/flows/{run_id}", headers=as_token(RESEARCH)).status_code == 404


@pytest.mark.parametrize("token", ["", "wrong", RESEARCH + "x", hashed(RESEARCH)])
def test_a_wrong_or_missing_token_is_401(http: TestClient, token: str) -> None:
    assert send(http, token, "agent:research:main") == 401


def test_a_non_owner_cannot_set_send_policy_by_patch_or_command(http: TestClient) -> None:
    key = "agent:research:webchat:direct:boss"
    http.post(
        f"/v1/sessions/{key}/messages",
        json={"message": "hi", "timeoutSeconds": 0},
        headers=as_token(RESEARCH),
    )
    assert (
        http.patch(f"/v1/sessions/{key}", json={"sendPolicy": "deny"}, headers=as_token(RESEARCH)).status_code
        == 403
    )
    assert (
        http.patch(f"/v1/sessions/{key}", json={"label": "fine"}, headers=as_token(RESEARCH)).status_code
        == 200
    )
    refused = http.post(
        f"/v1/sessions/{key}/messages",
        headers=as_token(RESEARCH),
        json={"message": "/send off", "channel": "webchat", "senderId": "boss"},
    ).json()
    assert refused["error"] == "/send is owner-only (this API token is not an owner)"
    done = http.post(
        f"/v1/sessions/{key}/messages",
        headers=as_token(OWNER),
        json={"message": "/send off", "channel": "webchat", "senderId": "boss"},
    ).json()
    assert done["reply"] == "Send policy for this session: deny."


def test_only_owners_list_every_session_and_read_outboxes(http: TestClient) -> None:
    assert http.get("/v1/sessions", headers=as_token(RESEARCH)).status_code == 403
    assert http.get("/v1/channels/webchat/x/messages", headers=as_token(RESEARCH)).status_code == 403
    http.post(
        "/v1/sessions/agent:research:cron:a/messages",
        json={"message": "hi", "timeoutSeconds": 0},
        headers=as_token(OWNER),
    )
    listing = http.get("/v1/sessions", headers=as_token(OWNER)).json()
    assert [row["key"] for row in listing["sessions"]] == ["agent:research:cron:a"]


def test_a_plain_token_is_an_operator(http: TestClient) -> None:
    assert send(http, OPERATOR, "main") == 200
    assert http.get("/v1/sessions", headers=as_token(OPERATOR)).status_code == 200


def test_every_token_is_compared_in_constant_time(config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr("clawbus.api.auth.hmac.compare_digest", counting)
    principal = principal_for(config, RESEARCH)
    assert principal is not None
    assert principal.name == "research-bot"
    assert len(calls) == 3  # every configured token, not only up to the match


def test_a_plain_text_token_in_the_file_is_named_for_a_warning(config: Config) -> None:
    assert plain_text_tokens(config) == ["gateway.auth.tokens[0]"]  # OPERATOR; the spec is hashed


def test_token_create_prints_a_token_and_its_hashed_entry() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "clawbus.api.cli",
            "token",
            "create",
            "--name",
            "ops",
            "--agent",
            "research",
            "--owner",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    token = out[0].removeprefix("token: ")
    spec = TokenSpec.model_validate(json.loads(out[2].strip().rstrip(",")))
    assert (spec.name, spec.agents, spec.owner, spec.sha256) == ("ops", ["research"], True, hashed(token))
    assert token not in out[2]


def test_a_token_spec_needs_exactly_one_secret() -> None:
    with pytest.raises(ValueError, match="exactly one of sha256 or token"):
        TokenSpec(name="x")
