"""Network probes: the interfaces a process has, and one connect to one address."""

from __future__ import annotations

import socket

from .protocol import Result, ok, refused


def interfaces(args: list[str]) -> Result:
    """Lists the network interfaces this process's network namespace holds.

    Read from procfs, not with if_nameindex(): that asks over a netlink socket, which the
    baseline seccomp filter refuses.
    """
    with open("/proc/self/net/dev", encoding="ascii") as dev:
        # Two header lines, then "<name>: <counters>" per interface.
        names = [line.split(":", 1)[0].strip() for line in dev.readlines()[2:] if ":" in line]
    return ok(interfaces=sorted(names))


def tcp_connect(args: list[str]) -> Result:
    """One TCP connect to an address and port; reports its errno. Nothing is sent."""
    address, port = args[0], int(args[1])
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.settimeout(10)
    try:
        sock.connect((address, port))
    except OSError as error:
        if error.errno is None:  # a timeout is not a kernel refusal: let it fail the run
            raise
        return refused(error, address=address, port=port)
    finally:
        sock.close()
    return ok(address=address, port=port)


def socket_inet(args: list[str]) -> Result:
    """socket(AF_INET, SOCK_STREAM) and nothing else: no connect, no byte sent."""
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError as error:
        return refused(error)
    sock.close()
    return ok()


ACTIONS = {"interfaces": interfaces, "tcp-connect": tcp_connect, "socket-inet": socket_inet}
