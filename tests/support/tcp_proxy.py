"""A TCP proxy in front of a real server (Redis, an API) that watches the requests going through it.

It can lose one reply: the command reaches Redis and runs, then the client's connection closes before the
answer comes back, as when Redis is killed right after a write. redis-py then sends the command again on a
new connection (its retry), which is what the tests watch. And it counts the requests holding a marker (an
HTTP path, say), for tests of what a client asks for and how often."""

from __future__ import annotations

import contextlib
import re
import socket
import threading

CHUNK = 65536
# What of each read from a client is kept for ``requests_holding``: a request's first line and headers.
HEAD = 2048
IDEMPOTENCY_KEY = re.compile(rb"^idempotency-key:[ \t]*(\S+)", re.IGNORECASE | re.MULTILINE)


class TcpProxy:
    def __init__(self, upstream_port: int) -> None:
        self._upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._marker: bytes | None = None
        self._every_other = False
        self._skip_next = False
        # ``lose_the_first_reply_per_key``: the Idempotency-Keys whose first request's reply was lost.
        self._keys_lost: set[bytes] | None = None
        self._sockets: list[socket.socket] = []
        self.lost = 0  # replies lost so far
        self._requests_seen: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def lose_the_reply_to(self, marker: bytes) -> None:
        """The next request holding ``marker`` (a script's SHA, say) runs; its reply is not passed on."""
        with self._lock:
            self._marker = marker

    def lose_every_other_reply_to(self, marker: bytes) -> None:
        """From now on, of the requests holding ``marker``, every other one runs and its reply is lost (its
        connection closed), the first one included."""
        with self._lock:
            self._marker = marker
            self._every_other = True

    def lose_the_first_reply_per_key(self, marker: bytes) -> None:
        """From now on, of the requests holding ``marker``, the first one with each Idempotency-Key runs and
        its reply is lost; the ones after it with that key pass. Unlike every other one, this holds per
        call however many clients send at once: each is lost exactly once."""
        with self._lock:
            self._marker = marker
            self._keys_lost = set()

    def requests_holding(self, marker: bytes) -> int:
        """How many of the requests sent so far hold ``marker`` (one read from the client: a request's
        head, as an HTTP client writes it at once)."""
        with self._lock:
            return sum(marker in data for data in self._requests_seen)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                close_socket(sock)

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(("127.0.0.1", self._upstream_port))
            with self._lock:
                self._sockets += [client, upstream]
            losing = threading.Event()  # set once this connection carried the marked request
            threading.Thread(target=self._requests, args=(client, upstream, losing), daemon=True).start()
            threading.Thread(target=self._replies, args=(upstream, client, losing), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket, losing: threading.Event) -> None:
        while data := recv(client):
            with self._lock:
                self._requests_seen.append(data[:HEAD])
                if self._marker is not None and self._marker in data:
                    self._mark(data, losing)
            if not send_all(upstream, data):
                break
        close_socket(upstream)

    def _mark(self, request: bytes, losing: threading.Event) -> None:
        """``request`` holds the marker: whether its reply is lost (``losing`` set), by the mode in force."""
        if self._keys_lost is not None:
            key = IDEMPOTENCY_KEY.search(request[:HEAD])
            if key is not None and key[1] not in self._keys_lost:
                self._keys_lost.add(key[1])
                losing.set()
            return
        if not self._every_other:
            self._marker = None
        if not self._skip_next:
            losing.set()  # before the request goes on: its reply cannot come back first
        self._skip_next = self._every_other and not self._skip_next

    def _replies(self, upstream: socket.socket, client: socket.socket, losing: threading.Event) -> None:
        while data := recv(upstream):
            if losing.is_set():
                with self._lock:
                    self.lost += 1
                break
            if not send_all(client, data):
                break
        close_socket(client)
        close_socket(upstream)


def recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(CHUNK)
    except OSError:
        return b""


def send_all(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True


def close_socket(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()
