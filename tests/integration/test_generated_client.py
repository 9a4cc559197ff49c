"""A typed client generated from the running API's /openapi.json (openapi-python-client) compiles and calls
the API: what a user of another language or tool gets from the published schema works as it says."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.stack import TOKEN, Stack

PACKAGE = "clawbus_generated"


@pytest.fixture(scope="module")
def generated(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("generated")
    (root / "openapi.json").write_text(httpx.get(f"{stack.url}/openapi.json", timeout=10).text)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}  # its ruff
    generate = ["generate", "--path", "openapi.json", "--meta", "none", "--output-path", PACKAGE]
    done = subprocess.run(
        [str(bin_dir / "openapi-python-client"), *generate],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    compiled = subprocess.run(
        [sys.executable, "-m", "compileall", "-q", PACKAGE],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def test_the_generated_client_sends_a_message_and_reads_the_session(stack: Stack, generated: Any) -> None:
    post = importlib.import_module(f"{PACKAGE}.api.sessions.post_message_v1_sessions_key_messages_post")
    get = importlib.import_module(f"{PACKAGE}.api.sessions.get_session_v1_sessions_key_get")
    inbound = importlib.import_module(f"{PACKAGE}.models.inbound_message_params").InboundMessageParams
    key = f"cron:generated-{uuid.uuid4().hex[:8]}"
    with generated.AuthenticatedClient(base_url=stack.url, token=TOKEN) as client:
        sent = post.sync(key, client=client, body=inbound(message="hello", timeout_seconds=20))
        assert sent.additional_properties["status"] == "ok"
        assert sent.additional_properties["reply"] == "echo: hello"
        entry = get.sync(key, client=client)
        assert entry.key == f"agent:main:{key}"
        refused = post.sync_detailed(key, client=client, body=inbound(message="   "))
        assert refused.status_code == 400
