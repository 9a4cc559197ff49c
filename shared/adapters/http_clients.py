"""HTTP clients and transports kept per process: building one costs about 50 ms of CPU (its TLS context),
and a kept one reuses its connections. Keyed by process id too, so a forked worker child never shares its
parent's sockets; one serves every thread of a process."""

from __future__ import annotations

import os
import threading
import urllib.request
from collections.abc import Callable
from typing import TypeVar

import httpx

_Kept = TypeVar("_Kept", httpx.Client, httpx.HTTPTransport)
_kept: dict[tuple[int, str, type], httpx.Client | httpx.HTTPTransport] = {}
_lock = threading.Lock()


def process_client(name: str, limits: httpx.Limits | None = None) -> httpx.Client:
    """This process's client for ``name`` (an endpoint, a use), made with ``limits`` the first time."""
    return _kept_one(httpx.Client, name, lambda: httpx.Client(limits=limits or httpx.Limits()))


def process_transport(url: str, limits: httpx.Limits | None = None) -> httpx.HTTPTransport:
    """This process's transport to the endpoint at ``url``: a client's connection pool without the client's
    work per request (cookies, redirects, auth, URL merging: a third of a streamed model call's CPU), for a
    caller that builds its requests whole. The environment's proxy for ``url`` applies, as a client's
    would (``HTTPS_PROXY``, ``NO_PROXY``)."""
    return _kept_one(
        httpx.HTTPTransport,
        url,
        lambda: httpx.HTTPTransport(limits=limits or httpx.Limits(), proxy=environment_proxy(url)),
    )


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url``, None where there is none or ``NO_PROXY`` exempts it."""
    target = httpx.URL(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(target.scheme) or proxies.get("all")
    if proxy is None or urllib.request.proxy_bypass(target.host):
        return None
    return proxy


def _kept_one(kind: type[_Kept], name: str, make: Callable[[], _Kept]) -> _Kept:
    key = (os.getpid(), name, kind)
    with _lock:
        kept = _kept.get(key)
        if kept is None:
            kept = _kept[key] = make()
        assert isinstance(kept, kind)
        return kept
