"""moto's server on a listening socket the controller made: ``python -m
app.controller.services.moto_listener <fd>``.

The controller binds 127.0.0.1 port 0 itself and hands the socket down, so the port is the
run's own from the start: none is picked by closing a probe socket, which another run could
take before moto binds it. Connections wait in the socket's backlog until moto serves them,
so the controller sends its first request without polling for the port. Otherwise this is
moto_server's own start (moto/server.py): the same application, request handler and signal
handling, with werkzeug's documented ``make_server(fd=...)`` in place of ``run_simple``.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from typing import Any

# moto's import builds a great many objects that live as long as the server, none of them
# garbage: the collector is off while they load, and they are frozen (skipped by collections)
# before it is on again. moto's start is the longest part of a local run's set-up.
gc.disable()

from moto.core.models import DEFAULT_ACCOUNT_ID  # noqa: E402
from moto.iam.models import iam_backends  # noqa: E402
from moto.moto_server.werkzeug_app import (  # noqa: E402
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.s3.models import s3_backends  # noqa: E402
from moto.sts.models import sts_backends  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

gc.freeze()
gc.enable()

LOOPBACK = "127.0.0.1"


def _stop(signum: int, frame: Any) -> None:
    # The state dies with the process: the objects left are no garbage collector's business,
    # and leaving them out of the exit's collections saves it most of its time.
    gc.freeze()
    sys.exit(0)


def _prepare(application: DomainDispatcherApplication) -> None:
    """Builds now, as the first request to each would, the applications and backends of the
    services a local run asks for (local_aws.py's Service): moto is up well before the
    controller's first request, and that request is on the run's critical path."""
    for name in ("iam", "sts", "s3"):
        application.app_instances[name] = create_backend_app(name)
    # Keyed as moto keys them: IAM and STS are global, S3 is kept per partition.
    iam_backends[DEFAULT_ACCOUNT_ID]["global"]
    sts_backends[DEFAULT_ACCOUNT_ID]["global"]
    s3_backends[DEFAULT_ACCOUNT_ID]["aws"]


def main(argv: list[str]) -> int:
    (fd_text,) = argv
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    application = DomainDispatcherApplication(create_backend_app)
    _prepare(application)
    # The address is the socket's own; these two only choose its family (IPv4).
    server = make_server(
        LOOPBACK, 0, application, threaded=True, request_handler=MotoRequestHandler, fd=int(fd_text)
    )
    # moto reads its port from here where a reply names the server, as moto_server sets it.
    os.environ["MOTO_PORT"] = str(server.server_address[1])
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
