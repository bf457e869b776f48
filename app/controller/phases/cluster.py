"""What only a run in the analyst Job's pod can check: the mounted Secret's file mode, the
supplier reached by its Service's cluster DNS name over TLS verified for that name, and the
pod's own egress bounded by its network policy."""

from __future__ import annotations

import errno
import os
import socket
import ssl
import stat
from typing import Any, Final
from urllib.parse import urlsplit

import boto3

from app.core import cluster_env
from app.core.cluster_settings import EGRESS_DENIED
from app.core.run import Run
from app.tools.catalogue import controller as c

HANDSHAKE_TIMEOUT_SECONDS: Final = 10.0
# A name under a reserved TLD (RFC 2606): no certificate of the supplier's can carry it.
UNNAMED_HOST: Final = "not-the-supplier.invalid"
# OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH: the chain verified, the name did not.
HOSTNAME_MISMATCH: Final = 62


# A destination no rule names must not answer within this (the node drops its packets: no answer
# at all), or refuse at once; the allowed ones answer well within it.
EGRESS_BOUND_SECONDS: Final = 3.0
REFUSALS: Final = {
    errno.ECONNREFUSED,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.EACCES,
    errno.EPERM,
}


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


def pod_egress_bounded(run: Run, session: boto3.Session) -> None:
    """Beside two controls (STS as the SDK calls it, the supplier), each destination of
    EGRESS_DENIED times out or is refused within EGRESS_BOUND_SECONDS."""
    # Checked with the other settings before the run began.
    denied = EGRESS_DENIED.value(os.environ) if run.in_cluster else ()
    keys = tuple(c.egress_key(host, port) for host, port in denied)
    run.checks.begin(c.EGRESS, bounded=bool(denied), denied=keys)
    if not run.in_cluster:
        run.checks.skip(
            c.EGRESS_BOUNDED, "a local run has no pod network; the Job and the rehearsal prove it"
        )
        return
    if not denied:
        run.checks.skip(c.EGRESS_BOUNDED, "this stack bounds no egress (egressPolicy is false)")
        return
    sts = urlsplit(session.client("sts").meta.endpoint_url)
    controls = [
        ("sts", "STS, as the AWS SDK calls it", sts.hostname or "", sts.port or 443),
        ("supplier", "the supplier API's Service", run.supplier.address, run.supplier.port),
    ]
    for target, what, host, port in controls:
        answer = _connect(host, port)
        claim = c.EGRESS_CONTROL(target=target, what=what, address=f"{host}:{port}")
        run.checks.require(claim, answer == "connected", detail=answer)
    for (host, port), key in zip(denied, keys, strict=True):
        answer = _connect(host, port)
        run.checks.require(
            c.EGRESS_REFUSED(key=key, destination=f"{host}:{port}"),
            answer.startswith(("no answer", "refused")),
            detail=answer,
        )


def _connect(host: str, port: int) -> str:
    """What one TCP connection attempt got: connected, no answer, refused (errno), or why it
    proves nothing (a name that does not resolve)."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        return f"the name does not resolve, which proves nothing: {error}"
    family, kind, proto, _, address = addresses[0]
    with socket.socket(family, kind, proto) as probe:
        probe.settimeout(EGRESS_BOUND_SECONDS)
        try:
            probe.connect(address)
        except TimeoutError:
            return f"no answer within {EGRESS_BOUND_SECONDS:.0f} s ({address[0]})"
        except OSError as error:
            if error.errno in REFUSALS:
                return f"refused, {errno.errorcode[error.errno]} ({address[0]})"
            return f"not a refusal: {error}"
    return "connected"
