"""Test hosts on one machine: a network namespace per host, each with its loopback and a veth to a bridge in
the test's own namespace, on a private subnet (10.231.N.0/24) nothing else on the machine routes. The test
process reaches every host over the bridge; a host is cut off by setting its link down (its packets are
dropped, as on a real partition: no reset, no error, until TCP gives up) and healed by setting it up again.

Needs root and ``ip`` (iproute2). Names carry the creating process's id and a counter, so parallel pytest-xdist
workers never collide, and a run that was killed before its teardown is swept by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import ipaddress
import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from clawbus.api.processes import Child, Process, redis_server_argv
from clawbus.shared.store.connection import answers

# The roles' own start-up checks, shared with tests/support/processes.py's roles on the loopback.
from tests.support import processes
from tests.support.processes import Role, raise_if_dead, stopped_on_failure, wait_for

# The subnets the hosts' bridges take, one a network: 10.231.0.0/24 to 10.231.255.0/24.
RANGE = ipaddress.IPv4Network("10.231.0.0/16")
# A host's Redis listens here: in a namespace of its own, no other process can hold the port.
REDIS_PORT = 16379
# Namespaces are ``clawbus-<pid>-<n>-<host>``, bridges ``cb<pid hex>-<n hex>`` (a link name has at most 15
# characters), a host's link ``<bridge>-<host number hex>``.
_NAMESPACE = re.compile(r"^clawbus-(\d+)-\d+-")
_BRIDGE = re.compile(r"^cb([0-9a-f]+)-[0-9a-f]+$")
_networks = itertools.count()


class HostsUnavailable(RuntimeError):
    """This machine cannot make test hosts (not root, no ``ip``, or no network namespaces)."""


def unavailable() -> str | None:
    """Why test hosts cannot be made here, or None if they can."""
    if os.geteuid() != 0:
        return "test hosts need root (network namespaces and veth links)"
    if shutil.which("ip") is None:
        return "test hosts need iproute2's `ip`"
    probe = f"clawbus-{os.getpid()}-probe"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe)
    return None


@dataclass(frozen=True, slots=True)
class Host:
    name: str
    namespace: str
    address: str
    # The bridge's end of the host's veth: down, the host is cut off.
    link: str

    def argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run on this host."""
        return ["ip", "netns", "exec", self.namespace, *argv]


class Network:
    """A bridge in the test's namespace and the hosts on it; ``close`` deletes all of them."""

    def __init__(self) -> None:
        _sweep()
        number = next(_networks)
        self.bridge = f"cb{os.getpid():x}-{number:x}"
        self._namespace_prefix = f"clawbus-{os.getpid()}-{number}-"
        self.hosts: list[Host] = []
        # Picking a free subnet and taking it is one step for every test process on the machine.
        with _machine_lock():
            self.subnet = _free_subnet()
            _ip("link", "add", self.bridge, "type", "bridge")
            # The bridge's own address is the test process's on the network.
            _ip("addr", "add", f"{self._address(0)}/{self.subnet.prefixlen}", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")

    def host(self, name: str) -> Host:
        """A new host: a namespace with its loopback up and a veth to the bridge, at the next address."""
        number = len(self.hosts) + 1
        host = Host(
            name, f"{self._namespace_prefix}{name}", self._address(number), f"{self.bridge}-{number:x}"
        )
        _ip("netns", "add", host.namespace)
        self.hosts.append(host)
        inside = ["ip", "-n", host.namespace]
        _ip("link", "add", host.link, "type", "veth", "peer", "name", "eth0", "netns", host.namespace)
        _ip("link", "set", host.link, "master", self.bridge, "up")
        _run([*inside, "addr", "add", f"{host.address}/{self.subnet.prefixlen}", "dev", "eth0"])
        _run([*inside, "link", "set", "lo", "up"])
        _run([*inside, "link", "set", "eth0", "up"])
        return host

    def cut(self, host: Host) -> None:
        """``host`` reaches no one and no one reaches it; its connections stay open, their packets lost."""
        _ip("link", "set", host.link, "down")

    def heal(self, host: Host) -> None:
        _ip("link", "set", host.link, "up")

    def close(self) -> None:
        """Every process still running on a host is killed, then every namespace and link deleted."""
        for host in self.hosts:
            _delete_namespace(host.namespace)
        self.hosts.clear()
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip("link", "del", self.bridge)

    def _address(self, number: int) -> str:
        return str(self.subnet.network_address + 1 + number)


@contextlib.contextmanager
def network() -> Iterator[Network]:
    made = Network()
    try:
        yield made
    finally:
        made.close()


class HostRole(Role):
    """A process on a host: an interpreter (or program) of its own under ``ip netns exec``, never a fork
    server's child, which would stay in the test's namespace."""

    def __init__(self, host: Host, argv: Sequence[str], env: dict[str, str], log: Path) -> None:
        super().__init__(host.argv(argv), env, log)

    def _spawn(self, sink: IO[bytes] | int) -> Process:
        return Child._spawn(self, sink)


def start_redis(host: Host, directory: Path) -> tuple[Role, str]:
    """A private redis-server on ``host``, in memory only: the role and its URL, once it answers."""
    directory.mkdir(parents=True, exist_ok=True)
    argv = redis_server_argv(REDIS_PORT, directory, appendfsync=None)
    argv[argv.index("--bind") + 1] = host.address
    # Protected mode answers only the loopback without a password; the subnet is this test's alone.
    argv += ["--protected-mode", "no"]
    role = HostRole(host, argv, dict(os.environ), directory / "redis.log").start()
    url = f"redis://{host.address}:{REDIS_PORT}/0"
    with stopped_on_failure(role):
        wait_for(lambda: answers(url) or role.exited(), 10, what=f"redis-server on {host.name}")
        raise_if_dead(role)
    return role, url


def start_worker(host: Host, env: dict[str, str], log_dir: Path, *, concurrency: int) -> Role:
    """``clawbus worker`` on ``host`` (the configured pool), once it has registered in Redis."""
    return processes.start_worker(
        env, log_dir, concurrency=concurrency, name_prefix=host.name, launch=functools.partial(HostRole, host)
    )


def _free_subnet() -> ipaddress.IPv4Network:
    """The first /24 of RANGE that no address or route on this machine overlaps (every network or address
    ``ip`` names counts, whatever its place in the line)."""
    listed = _ip("-4", "-o", "addr", "show") + _ip("-4", "-o", "route", "show", "table", "all")
    taken = []
    for word in listed.split():
        with contextlib.suppress(ValueError):
            taken.append(ipaddress.ip_network(word, strict=False))
    for subnet in RANGE.subnets(new_prefix=24):
        if not any(subnet.overlaps(other) for other in taken if other.prefixlen > 0):
            return subnet
    raise HostsUnavailable(f"every /24 of {RANGE} is taken already")


def _sweep() -> None:
    """Namespaces and bridges left by test processes that died before their teardown."""
    for namespace in _ip("netns", "list").split():
        found = _NAMESPACE.match(namespace)
        if found and not _alive(int(found.group(1))):
            _delete_namespace(namespace)
    for line in _ip("-o", "link", "show", "type", "bridge").splitlines():
        name = line.split(":")[1].strip()
        found = _BRIDGE.match(name)
        if found and not _alive(int(found.group(1), 16)):
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", name)


def _delete_namespace(namespace: str) -> None:
    """Its processes killed first: a namespace outlives its name while a process is in it."""
    pids = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False)
    for pid in pids.stdout.split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    # Deleting the namespace deletes the veth in it, and so its peer on the bridge.
    subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    with open(Path(tempfile.gettempdir()) / "clawbus-hosts.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _ip(*args: str) -> str:
    return _run(["ip", *args])


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)
    return done.stdout
