"""A canary: a listener on the supplier's host at a port no route names, for the tunnel checks.

nono-py's proxy lets a role reach its route's upstream host on any port; the canary is what
such a tunnel would reach. It answers every connection with 200 and counts them, so the
controller's own request shows it reachable (the control) and the count shows whether any
role's request got there through its proxy.
"""

from __future__ import annotations

import socket
import threading
from typing import Final

from app.tools import waiting

ANSWER: Final = b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\nConnection: close\r\n\r\ncanary\n"
READ_SECONDS: Final = 1.0


class Canary:
    """Listens on ``address`` at a free port while the ``with`` block runs; ``connections``
    is complete once it has ended."""

    def __init__(self, address: str) -> None:
        self._listener = socket.create_server((address, 0))
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self.connections = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="canary", daemon=True)

    def __enter__(self) -> Canary:
        self._thread.start()
        return self

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with connection:
                connection.settimeout(READ_SECONDS)
                try:
                    connection.recv(4096)
                    connection.sendall(ANSWER)
                except OSError:
                    pass  # the count is the evidence; the answer is for the one who asked

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()
        waiting.join(self._thread)
        # A connection still waiting to be accepted counts too: the kernel completed it.
        self._listener.setblocking(False)
        try:
            while True:
                connection, _ = self._listener.accept()
                connection.close()
                self.connections += 1
        except BlockingIOError:
            pass
        finally:
            self._listener.close()
