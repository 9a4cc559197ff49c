"""shared/adapters/http_clients.py: one kept HTTP client (or transport) per process and name, never a
parent's in a forked child; a transport goes through the proxy the environment names, as a client would."""

from __future__ import annotations

import os

import httpx
import pytest

from clawbus.shared.adapters.http_clients import environment_proxy, process_client, process_transport


def test_the_same_name_gets_the_same_client_and_another_name_its_own() -> None:
    assert process_client("test-a") is process_client("test-a")
    assert process_client("test-a") is not process_client("test-b")


def test_a_forked_child_makes_its_own_client() -> None:
    parent = id(process_client("test-fork"))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report whether it got its parent's client, then leave at once
        os.write(write, b"same" if id(process_client("test-fork")) == parent else b"own")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as answer:
        assert answer.read() == b"own"


def test_a_transport_is_kept_per_endpoint_apart_from_the_clients() -> None:
    transport = process_transport("http://test-transport:1")
    assert transport is process_transport("http://test-transport:1")
    assert transport is not process_transport("http://test-transport:2")
    assert isinstance(transport, httpx.HTTPTransport)
    assert isinstance(process_client("http://test-transport:1"), httpx.Client)


def test_the_environments_proxy_applies_unless_no_proxy_exempts_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    assert environment_proxy("https://api.example.com/v1") is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,.corp.example")
    assert environment_proxy("https://api.example.com/v1") == "http://proxy.internal:3128"
    assert environment_proxy("http://api.example.com/v1") is None  # no proxy named for plain HTTP
    assert environment_proxy("https://llm.corp.example/v1") is None
    assert environment_proxy("https://localhost:8000/v1") is None
