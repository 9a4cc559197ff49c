"""HTTP clients kept per process: building an httpx client costs about 50 ms of CPU (its TLS context), and
a kept one reuses its connections. Keyed by process id too, so a forked worker child never shares its
parent's sockets; one client serves every thread of a process."""

from __future__ import annotations

import os
import threading

import httpx

_clients: dict[tuple[int, str], httpx.Client] = {}
_lock = threading.Lock()


def process_client(name: str, limits: httpx.Limits | None = None) -> httpx.Client:
    """This process's client for ``name`` (an endpoint, a use), made with ``limits`` the first time."""
    key = (os.getpid(), name)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = httpx.Client(limits=limits or httpx.Limits())
        return client
