"""A slow link between two hosts: a TCP proxy that holds every chunk for a one-way delay, both ways.

The kernel of the test machines has no netem qdisc, so ``tc`` cannot add delay; this proxy does, for one
pair of hosts (a process and the server it talks to). A chunk is stamped when it arrives and sent on at
arrival + delay, in order, by a releaser of its own direction: chunks in flight overlap, so a pipeline of
commands pays the delay once, as on a real link, not once per command. It models latency only: no loss, no
jitter, no bandwidth limit.

It also counts round trips, per connection: a burst of client-to-server chunks that follows a reply (or
opens the connection) is one round trip, however many commands it holds. ``round_trips_within`` gives the
ones a process made between two moments and was answered within them: the trips a request's answer had to
wait for (a fire-and-forget command whose reply comes after the answer is not one).
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
import time
from dataclasses import dataclass, field

from tests.support.tcp_proxy import close_socket, recv, send_all

# What of a round trip's first chunk is kept, to tell which command opened it.
HEAD = 120
# Both ways together: 50 ms between two hosts.
ONE_WAY_S = 0.025


@dataclass
class RoundTrip:
    """One client-to-server burst and the first reply to it. Times are ``time.monotonic()`` at the proxy."""

    connection: int
    started: float  # the burst's first chunk arrived from the client
    head: bytes  # its first bytes
    answered: float | None = None  # the first reply chunk arrived from the server
    delivered: float | None = None  # ... and was sent on to the client (answered + the delay)


@dataclass
class _Connection:
    number: int
    client: socket.socket
    upstream: socket.socket
    current: RoundTrip | None = None
    open_directions: int = 2
    lock: threading.Lock = field(default_factory=threading.Lock)


class SlowLink:
    """Listens on ``listen`` (a free port of that address) and forwards to ``upstream`` through the delay."""

    def __init__(
        self, upstream: tuple[str, int], one_way_s: float = ONE_WAY_S, listen: str = "127.0.0.1"
    ) -> None:
        self._upstream = upstream
        self.one_way_s = one_way_s
        self._listener = socket.create_server((listen, 0))
        self.host = listen
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._connections: list[_Connection] = []
        self._trips: list[RoundTrip] = []
        self._closed = False
        threading.Thread(target=self._serve, daemon=True, name=f"slow-link-{self.port}").start()

    def redis_url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def round_trips(self) -> list[RoundTrip]:
        with self._lock:
            return list(self._trips)

    def round_trips_within(self, start: float, end: float) -> list[RoundTrip]:
        """The round trips started at or after ``start`` whose reply reached the client by ``end``."""
        return [
            trip
            for trip in self.round_trips()
            if trip.started >= start and trip.delivered is not None and trip.delivered <= end
        ]

    def last_round_trip(self) -> RoundTrip:
        with self._lock:
            return self._trips[-1]

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            close_socket(connection.client)
            close_socket(connection.upstream)

    def __enter__(self) -> SlowLink:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self._upstream)
            except OSError:
                close_socket(client)
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed:
                    close_socket(client)
                    close_socket(upstream)
                    return
                connection = _Connection(len(self._connections), client, upstream)
                self._connections.append(connection)
            for source, sink, requests in ((client, upstream, True), (upstream, client, False)):
                pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()
                threading.Thread(
                    target=self._read, args=(connection, source, pending, requests), daemon=True
                ).start()
                threading.Thread(target=self._release, args=(connection, sink, pending), daemon=True).start()

    def _read(
        self,
        connection: _Connection,
        source: socket.socket,
        pending: queue.SimpleQueue[tuple[float, bytes]],
        requests: bool,
    ) -> None:
        while data := recv(source):
            arrived = time.monotonic()
            self._count(connection, requests, arrived, data)
            pending.put((arrived + self.one_way_s, data))
        pending.put((time.monotonic() + self.one_way_s, b""))  # the end, after what came before it

    def _count(self, connection: _Connection, request: bool, arrived: float, data: bytes) -> None:
        with connection.lock:
            trip = connection.current
            if request:
                if trip is None or trip.answered is not None:
                    trip = connection.current = RoundTrip(connection.number, arrived, data[:HEAD])
                    with self._lock:
                        self._trips.append(trip)
            elif trip is not None and trip.answered is None:
                trip.answered = arrived
                trip.delivered = arrived + self.one_way_s

    def _release(
        self, connection: _Connection, sink: socket.socket, pending: queue.SimpleQueue[tuple[float, bytes]]
    ) -> None:
        while True:
            due, data = pending.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:  # the source closed: so does this direction, after what came before
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                break
            if not send_all(sink, data):  # the sink is gone: the whole connection with it
                close_socket(connection.client)
                close_socket(connection.upstream)
                break
        with connection.lock:
            connection.open_directions -= 1
            last = connection.open_directions == 0
        if last:
            close_socket(connection.client)
            close_socket(connection.upstream)


def round_trips_on_path(front: SlowLink, back: SlowLink) -> list[RoundTrip]:
    """The round trips through ``back`` (a server's link to Redis) that the server behind ``front`` made
    for the last request through ``front`` and had answered before it answered that request: from the
    moment the request reached the server to the moment its answer left it."""
    request = front.last_round_trip()
    if request.answered is None:
        raise RuntimeError("the last request through the link has no answer yet")
    return back.round_trips_within(request.started + front.one_way_s, request.answered)
