"""A request's time budget: every socket operation of it is given only what is left.

A whole request (handshake, head, body and answer) ends within REQUEST_DEADLINE_SECONDS, however
its client trickles; a keep-alive connection's wait for its next request counts toward that
request.
"""

from __future__ import annotations

import socket
import time
from typing import Final

REQUEST_DEADLINE_SECONDS: Final = 10.0
SEND_SLICE_BYTES: Final = 64 * 1024


class Deadline:
    """The time a request has left; every socket operation is given only that."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def arm(self, sock: socket.socket) -> None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline has passed")
        sock.settimeout(left)


def send_within(sock: socket.socket, data: bytes, deadline: Deadline) -> None:
    """sendall in slices, each given what is left of the deadline (SSLSocket.sendall would
    give every one of its sends the whole timeout again)."""
    view = memoryview(data)
    while view:
        deadline.arm(sock)
        sent = sock.send(view[:SEND_SLICE_BYTES])
        view = view[sent:]
