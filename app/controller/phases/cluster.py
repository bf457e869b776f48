"""What only a run in the analyst Job's pod can check: the mounted Secret's file mode, and the
supplier reached by its Service's cluster DNS name over TLS verified for that name."""

from __future__ import annotations

import os
import socket
import ssl
import stat
from typing import Any, Final
from urllib.parse import urlsplit

from app.controller import catalogue as c
from app.core import cluster_env
from app.core.run import Run

HANDSHAKE_TIMEOUT_SECONDS: Final = 10.0
# A name under a reserved TLD (RFC 2606): no certificate of the supplier's can carry it.
UNNAMED_HOST: Final = "not-the-supplier.invalid"
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH: the chain verified, the name did not.
HOSTNAME_MISMATCH: Final = 62


def cluster_mounts_and_names(run: Run) -> None:
    run.checks.begin(c.CLUSTER)
    _secret_file_mode(run)
    _service_name_over_tls(run)


def _secret_file_mode(run: Run) -> None:
    """The key file as the kubelet made it from the Secret volume's defaultMode and fsGroup."""
    path = run.supplier.key_file
    st = os.stat(path)  # follows the kubelet's ..data symlinks to the file itself
    mode = stat.S_IMODE(st.st_mode)
    groups = {os.getegid(), *os.getgroups()}
    expected = cluster_env.SECRET_FILE_MODE
    run.checks.require(
        c.SECRET_FILE_MODE(path=path, mode=f"{expected:04o}"),
        mode == expected and st.st_uid == 0 and st.st_gid != 0 and st.st_gid in groups,
        detail=f"{stat.filemode(st.st_mode)} ({mode:04o}) owned {st.st_uid}:{st.st_gid}, the "
        f"controller's groups {sorted(groups)}",
    )


def _handshake(address: str, port: int, context: ssl.SSLContext, name: str) -> dict[str, Any]:
    with (
        socket.create_connection((address, port), timeout=HANDSHAKE_TIMEOUT_SECONDS) as raw,
        context.wrap_socket(raw, server_hostname=name) as tls,
    ):
        return tls.getpeercert() or {}


def _service_name_over_tls(run: Run) -> None:
    supplier = run.supplier
    host = urlsplit(supplier.url).hostname or ""
    context = ssl.create_default_context(cafile=str(supplier.ca_file))
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        names = [
            value
            for kind, value in _handshake(supplier.address, supplier.port, context, host).get(
                "subjectAltName", ()
            )
            if kind == "DNS"
        ]
        problem = ""
    except (OSError, ssl.SSLError) as error:
        names, problem = [], f"{type(error).__name__}: {error}"
    run.checks.require(
        c.SERVICE_NAME(host=host),
        not problem and host.endswith(".svc.cluster.local") and host in names,
        detail=problem
        or f"{supplier.address}:{supplier.port}, verified against {supplier.ca_file}; the "
        f"certificate names {names}",
    )
    code, refusal = 0, "the handshake verified"
    try:
        _handshake(supplier.address, supplier.port, context, UNNAMED_HOST)
    except ssl.SSLCertVerificationError as error:
        code, refusal = error.verify_code, error.verify_message
    except (OSError, ssl.SSLError) as error:
        refusal = f"not a verification failure: {type(error).__name__}: {error}"
    run.checks.require(
        c.SERVICE_NAME_CONTROL(name=UNNAMED_HOST), code == HOSTNAME_MISMATCH, detail=refusal
    )
