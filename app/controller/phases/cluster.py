"""What only a run in the analyst Job's pod can check: the mounted Secret's file mode, and the
supplier reached by its Service's cluster DNS name over TLS verified for that name."""

from __future__ import annotations

import os
import socket
import ssl
import stat
from typing import Any, Final
from urllib.parse import urlsplit

from app.core import cluster_env
from app.core.run import Run

HANDSHAKE_TIMEOUT_SECONDS: Final = 10.0
# A name under a reserved TLD (RFC 2606): no certificate of the supplier's can carry it.
UNNAMED_HOST: Final = "not-the-supplier.invalid"
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH: the chain verified, the name did not.
HOSTNAME_MISMATCH: Final = 62


def cluster_mounts_and_names(run: Run) -> None:
    run.checks.begin("cluster")
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
        mode == expected and st.st_uid == 0 and st.st_gid != 0 and st.st_gid in groups,
        f"the supplier key Secret's file {path} has the mode the manifest gives it, "
        f"{expected:04o}, owned root:{st.st_gid}: the controller reads it through its group "
        f"{st.st_gid} (the pod's fsGroup), and no other user can",
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
        not problem and host.endswith(".svc.cluster.local") and host in names,
        f"the controller reaches the supplier API by its Service's cluster DNS name {host} "
        f"({supplier.address}:{supplier.port}) over TLS verified against {supplier.ca_file}, "
        "whose certificate carries that name",
        detail=problem or f"certificate names {names}",
    )
    code, refusal = 0, "the handshake verified"
    try:
        _handshake(supplier.address, supplier.port, context, UNNAMED_HOST)
    except ssl.SSLCertVerificationError as error:
        code, refusal = error.verify_code, error.verify_message
    except (OSError, ssl.SSLError) as error:
        refusal = f"not a verification failure: {type(error).__name__}: {error}"
    run.checks.require(
        code == HOSTNAME_MISMATCH,
        f"control: the same server fails verification under a name its certificate does not "
        f"carry ({UNNAMED_HOST}): {refusal}",
        detail=refusal,
    )
