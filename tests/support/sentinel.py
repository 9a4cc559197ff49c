"""A Redis Sentinel set of real processes for tests: a master, a replica and three sentinels, each on a free
loopback port (never 6379), with their data in the test's folder; every process is stopped at the end."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import redis

from clawbus.api.processes import Child, free_port, redis_server_argv, redis_server_binary, wait_for

MASTER_NAME = "clawbus-test"
# Sentinels call a master down after this long without an answer (Redis's default is 30 s).
DOWN_AFTER_MS = 1000
# Three sentinels that see the master down at the same moment can each vote for itself, and then try again
# only twice this long later: seen on a loaded machine, with 10 s the replica was promoted 21 s after the
# kill instead of about 2 s. A failover on loopback takes well under a second.
FAILOVER_TIMEOUT_MS = 3000


@dataclass
class SentinelSet:
    root: Path
    ports: list[int] = field(default_factory=list)  # the two data servers, in start order
    sentinel_ports: list[int] = field(default_factory=list)
    servers: dict[int, Child] = field(default_factory=dict)
    sentinels: list[Child] = field(default_factory=list)

    def start(self) -> SentinelSet:
        master = self.start_server(free_port())
        self.start_server(free_port(), replica_of=master)
        self.wait_replicated(master)
        for i in range(3):
            self._start_sentinel(i, master)
        wait_for(self._sentinels_see_each_other, 30, what="the sentinels to find the replica and each other")
        return self

    @property
    def hosts(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port in self.sentinel_ports)

    def start_server(self, port: int, replica_of: int | None = None) -> int:
        directory = self.root / f"redis-{port}"
        directory.mkdir(parents=True, exist_ok=True)
        argv = redis_server_argv(port, directory, appendfsync="always")
        if replica_of is not None:
            argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        self.servers[port] = Child(f"redis-{port}", argv, dict(os.environ)).start(directory / "redis.log")
        if port not in self.ports:
            self.ports.append(port)
        wait_for(lambda: _answers(port), 10, what=f"redis-server :{port}")
        return port

    def kill(self, port: int) -> None:
        """SIGKILL: no shutdown, no last write to disk, connections cut."""
        self.servers.pop(port).kill()

    def master(self) -> int:
        """The master's port, as the sentinels name it."""
        with redis.Redis(port=self.sentinel_ports[0], decode_responses=True, socket_timeout=2) as sentinel:
            _host, port = sentinel.sentinel_get_master_addr_by_name(MASTER_NAME)
        return int(port)

    def wait_replicated(self, master: int, timeout: float = 30) -> None:
        def linked() -> bool:
            with redis.Redis(port=master, decode_responses=True, socket_timeout=2) as client:
                return int(client.info("replication")["connected_slaves"]) >= 1

        wait_for(linked, timeout, what=f"a replica of :{master}")

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, decode_responses=True)

    def stop(self) -> None:
        for child in [*self.sentinels, *self.servers.values()]:
            child.kill()
        self.sentinels.clear()
        self.servers.clear()

    def _start_sentinel(self, index: int, master: int) -> None:
        port = free_port()
        directory = self.root / f"sentinel-{index}"
        directory.mkdir(parents=True, exist_ok=True)
        conf = directory / "sentinel.conf"  # a sentinel rewrites its file as it learns the set
        conf.write_text(
            "\n".join(
                [
                    f"port {port}",
                    "bind 127.0.0.1",
                    f"dir {directory}",
                    f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master} 2",
                    f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}",
                    f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}",
                    f"sentinel parallel-syncs {MASTER_NAME} 1",
                    "",
                ]
            )
        )
        argv = [redis_server_binary(), str(conf), "--sentinel"]
        self.sentinels.append(
            Child(f"sentinel-{index}", argv, dict(os.environ)).start(directory / "sentinel.log")
        )
        self.sentinel_ports.append(port)
        wait_for(lambda: _answers(port), 10, what=f"sentinel :{port}")

    def _sentinels_see_each_other(self) -> bool:
        for port in self.sentinel_ports:
            with redis.Redis(port=port, decode_responses=True, socket_timeout=2) as sentinel:
                if len(sentinel.sentinel_slaves(MASTER_NAME)) < 1:
                    return False
                if len(sentinel.sentinel_sentinels(MASTER_NAME)) < len(self.sentinel_ports) - 1:
                    return False
        return True


def _answers(port: int) -> bool:
    try:
        with redis.Redis(port=port, socket_timeout=1, socket_connect_timeout=1) as client:
            return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
