"""api/embedded.py: `clawbus up` refuses to start anything on a port that is taken, naming what holds it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clawbus.api.embedded import Holder, ListenPort, bind_error, port_holder, ports_problem
from clawbus.api.processes import free_port


@contextmanager
def listening(port: int = 0) -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        yield sock.getsockname()[1]


def api_at(port: int) -> ListenPort:
    return ListenPort("API", "127.0.0.1", port, "--api-port")


def flower_at(port: int) -> ListenPort:
    return ListenPort("Flower", "127.0.0.1", port, "--flower-port")


def this_process() -> Holder:
    return Holder(os.getpid(), Path("/proc/self/comm").read_text().strip())


def test_the_holder_of_a_listening_port_is_found_by_its_socket() -> None:
    with listening() as port:
        assert port_holder(port) == this_process()


def test_a_port_nobody_listens_on_has_no_holder() -> None:
    with socket.socket() as bound_only:  # bound but not listening: no server holds it
        bound_only.bind(("127.0.0.1", 0))
        assert port_holder(bound_only.getsockname()[1]) is None


def test_a_socket_no_visible_process_has_open_has_no_holder(tmp_path: Path) -> None:
    (tmp_path / "net").mkdir()
    header = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    )
    row = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000  0 424242 1\n"
    (tmp_path / "net" / "tcp").write_text(header + row)
    (tmp_path / "77" / "fd").mkdir(parents=True)
    (tmp_path / "77" / "fd" / "3").symlink_to("socket:[111]")
    assert port_holder(8080, tmp_path) is None
    (tmp_path / "77" / "fd" / "4").symlink_to("socket:[424242]")
    (tmp_path / "77" / "comm").write_text("nginx\n")
    assert port_holder(8080, tmp_path) == Holder(77, "nginx")


def test_free_ports_are_no_problem() -> None:
    assert ports_problem([api_at(free_port()), flower_at(free_port())]) is None


def test_a_taken_api_port_is_one_line_naming_the_port_its_holder_and_the_option() -> None:
    with listening() as port:
        problem = ports_problem([api_at(port), flower_at(free_port())])
    me = this_process()
    assert problem == f"API port {port} is taken by pid {me.pid} ({me.command}); pick another with --api-port"


def test_a_taken_port_whose_holder_cannot_be_seen_says_so() -> None:
    with listening() as port:
        problem = ports_problem([flower_at(port)], holder=lambda _: None)
    assert problem == (
        f"Flower port {port} is taken (by a process not visible to this user); pick another with --flower-port"
    )


def test_both_ports_taken_are_named_in_the_one_line() -> None:
    with listening() as api, listening() as flower:
        problem = ports_problem([api_at(api), flower_at(flower)])
    assert problem is not None
    assert "\n" not in problem
    assert f"API port {api} is taken by pid {os.getpid()}" in problem
    assert f"Flower port {flower} is taken by pid {os.getpid()}" in problem
    assert problem.endswith("pick others with --api-port and --flower-port")


def test_the_api_and_flower_on_one_port_is_a_problem() -> None:
    port = free_port()
    assert ports_problem([api_at(port), flower_at(port)]) == (
        f"Flower port {port} is the API port too; pick another with --flower-port"
    )


def test_a_port_whose_last_connection_is_still_closing_is_free_to_bind() -> None:
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn's and Flower's are
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = server.accept()
            accepted.close()  # the server's side closes first, so it is the one left in TIME_WAIT
            client.recv(1)
    # A restarted uvicorn or Flower binds over TIME_WAIT (SO_REUSEADDR); a check without it says "taken".
    assert bind_error("127.0.0.1", port) is None
