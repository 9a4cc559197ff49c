"""The load generator's side of the HTTP API: lean keep-alive posters, one per submitting thread."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar
from urllib.parse import quote, urlsplit

from bench.stack import TOKEN, Stack

T = TypeVar("T")


def fan_out(call: Callable[[int], T], total: int, threads: int) -> list[T]:
    with ThreadPoolExecutor(threads, thread_name_prefix="bench-submit") as pool:
        return list(pool.map(call, range(total)))


class Poster:
    """One keep-alive HTTP connection, as lean as a load generator can be: it shares the two CPUs with
    what it measures, and every millisecond it spends (httpx takes about four times this) is one the
    API and the workers do not get. The bare baseline's producer is Celery's own ``delay``."""

    def __init__(self, api_url: str, token: str) -> None:
        url = urlsplit(api_url)
        self._connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80)
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(self, path: str, body: dict[str, object]) -> dict[str, object]:
        return self._request("POST", path, json.dumps(body), (200,))

    def open_session(self, session_key: str) -> dict[str, object]:
        """``PUT /v1/sessions/{key}``: the session, opened if it was not (201) or as it is (200)."""
        return self._request("PUT", f"/v1/sessions/{quote(session_key, safe=':@-._~')}", None, (200, 201))

    def _request(self, method: str, path: str, body: str | None, ok: tuple[int, ...]) -> dict[str, object]:
        try:
            self._connection.request(method, path, body, self._headers)
        except (BrokenPipeError, ConnectionResetError):
            # The server dropped the connection before reading this request (a kept-alive one it closed):
            # nothing was sent to the service, so it is sent once more on a new connection.
            self._connection.close()
            self._connection.request(method, path, body, self._headers)
        response = self._connection.getresponse()
        payload = response.read()
        if response.status not in ok:
            raise RuntimeError(f"{method} {path}: HTTP {response.status}: {payload[:300]!r}")
        answer: dict[str, object] = json.loads(payload)
        return answer

    def close(self) -> None:
        self._connection.close()


@contextmanager
def posters(stack: Stack) -> Iterator[Callable[[], Poster]]:
    """One connection per submitting thread, all closed at the end."""
    local = threading.local()
    made: list[Poster] = []
    lock = threading.Lock()

    def for_thread() -> Poster:
        poster: Poster | None = getattr(local, "poster", None)
        if poster is None:
            poster = local.poster = Poster(stack.api_url, TOKEN)
            with lock:
                made.append(poster)
        return poster

    try:
        yield for_thread
    finally:
        for poster in made:
            poster.close()


def open_sessions(stack: Stack, session_keys: Sequence[str], threads: int = 8) -> None:
    """Open these sessions through the API (``PUT /v1/sessions/{key}``): a send opens none, so a figure
    that sends to fresh sessions opens them in its set-up, before anything is timed."""
    with posters(stack) as poster_for_thread:
        fan_out(lambda i: poster_for_thread().open_session(session_keys[i]), len(session_keys), threads)
