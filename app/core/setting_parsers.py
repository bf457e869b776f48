"""One parser per kind of value a cluster-mode variable holds, each saying what it accepts: the
URLs (scheme, host, a port in range, nothing else), the files (a readable regular file of
bounded size, links followed as the kubelet mounts them), the CA (PEM that the TLS library
loads), the Pod Identity token (what botocore can send as a header), the credential URI (what
botocore's container provider accepts) and the names (app/core/cluster_settings.py names the
variables)."""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from app.core import cluster_env

# A supplier API key is a few dozen bytes; a CA bundle a few KiB; a projected token about one.
MAX_KEY_BYTES: Final = 4096
MAX_CA_BYTES: Final = 1024 * 1024
MAX_TOKEN_BYTES: Final = 64 * 1024

_LABEL: Final = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_TOKEN: Final = re.compile(rb"^[\x21-\x7e]+$")
# botocore's container credential provider takes an http:// URI only from a loopback address
# or one of these hosts (the ECS and EKS Pod Identity agents); https:// from any host.
CONTAINER_AGENT_HOSTS: Final = ("169.254.170.2", "169.254.170.23", "fd00:ec2::23", "localhost")


class Unusable(ValueError):
    """What is wrong with one value (without the value), and what the variable accepts."""

    def __init__(self, problem: str, accepts: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.accepts = accepts


@dataclass(frozen=True)
class Endpoint:
    """A parsed service URL: the URL as given, and its scheme, host and port."""

    url: str
    scheme: str
    host: str
    port: int


def read_setting_file(path: Path, limit: int) -> bytes:
    """A regular file of at most ``limit`` bytes, links followed (the kubelet mounts a Secret's
    files as links into its own folder); a FIFO or a device is refused without a wait."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as error:
        raise Unusable(f"cannot be read ({error.strerror})", "a readable file") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unusable("is not a regular file", "a regular file")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise Unusable(f"cannot be read ({error.strerror})", "a readable file") from None
    finally:
        os.close(fd)
    if size > limit:
        raise Unusable(f"is over {limit} bytes", f"a file of at most {limit} bytes")
    return b"".join(chunks)


def read_key_file(path: Path) -> bytes:
    """A key file's bytes less surrounding whitespace (Secret files and editors add a trailing
    newline), at most MAX_KEY_BYTES."""
    key = read_setting_file(path, MAX_KEY_BYTES).strip()
    if not key:
        raise Unusable("is empty", "a file holding the supplier API key")
    return key


def key_file(value: str) -> Path:
    read_key_file(Path(value))
    return Path(value)


def ca_file(value: str) -> Path:
    data = read_setting_file(Path(value), MAX_CA_BYTES)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data.decode("ascii"))
    except (UnicodeDecodeError, ssl.SSLError):
        raise Unusable(
            "holds no PEM certificate",
            "a PEM file of the CA certificate that signed the supplier's certificate",
        ) from None
    return Path(value)


def token_file(value: str) -> Path:
    token = read_setting_file(Path(value), MAX_TOKEN_BYTES)
    accepts = (
        "the projected service account token EKS Pod Identity mounts: visible ASCII characters "
        "and no newline (botocore sends it as the Authorization header as it is)"
    )
    if not token:
        raise Unusable("is empty", accepts)
    if not _TOKEN.fullmatch(token):
        if token.endswith((b"\n", b"\r")):
            raise Unusable("ends in a newline", accepts)
        raise Unusable("holds whitespace, a control character or a byte beyond ASCII", accepts)
    return Path(value)


def _host(host: str) -> str:
    """A DNS name (labels of letters, digits and hyphens) or an IP address."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    name = host.removesuffix(".")
    if not name or len(name) > 253 or not all(_LABEL.fullmatch(p) for p in name.split(".")):
        raise ValueError("its host is not a host name or an IP address")
    return name


def _url(value: str, schemes: tuple[str, ...], accepts: str) -> Endpoint:
    # urlsplit drops tabs and newlines anywhere and spaces at the ends, without a word: the
    # URL it would parse is not the one given, which the clients would still send.
    if not value.isprintable() or any(c.isspace() for c in value):
        raise Unusable("holds whitespace or a control character", accepts)
    try:
        parts = urlsplit(value)
        port = parts.port  # raises for a port that is not a number in 0..65535
        host = _host(parts.hostname or "")
    except ValueError as error:
        raise Unusable(f"is not a URL ({error})", accepts) from None
    if parts.scheme not in schemes:
        raise Unusable(f"is not an {' or '.join(f'{s}://' for s in schemes)} URL", accepts)
    if parts.username is not None or parts.password is not None:
        raise Unusable("holds a user name or password", accepts)
    if port == 0:
        raise Unusable("names port 0", accepts)
    return Endpoint(value, parts.scheme, host, port or {"http": 80, "https": 443}[parts.scheme])


def https_service(value: str) -> Endpoint:
    accepts = "an https://host[:port] URL and nothing more, as the Job sets it"
    endpoint = _url(value, ("https",), accepts)
    parts = urlsplit(value)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise Unusable("has a path, a query or a fragment", accepts)
    return endpoint


def credentials_uri(value: str) -> Endpoint:
    accepts = (
        "the URL EKS Pod Identity gives (http://169.254.170.23/v1/credentials): https://, or "
        "http:// from a loopback address or " + ", ".join(CONTAINER_AGENT_HOSTS)
    )
    endpoint = _url(value, ("http", "https"), accepts)
    if endpoint.scheme == "http" and endpoint.host not in CONTAINER_AGENT_HOSTS:
        try:
            loopback = ipaddress.ip_address(endpoint.host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise Unusable(
                "is refused by botocore, which takes http:// only from a loopback address or "
                "a container credential agent",
                accepts,
            )
    return endpoint


def name_parser(pattern: re.Pattern[str], what: str, accepts: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if not pattern.fullmatch(value):
            raise Unusable(f"is not {what}", accepts)
        return value

    return parse


def destinations(value: str) -> tuple[tuple[str, int], ...]:
    """The destinations the stack's egress policy denies the pod: ``host:port``, space-separated."""
    found = []
    for part in value.split():
        host, _, port = part.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise Unusable(
                f"holds {part!r}, which is not host:port",
                "host:port destinations with a port from 1 to 65535, space-separated, as the "
                "Job sets it",
            )
        found.append((host, int(port)))
    return tuple(found)


def rehearsal_switch(value: str) -> bool:
    if value != cluster_env.REHEARSAL_ON:
        raise Unusable(
            f"is not {cluster_env.REHEARSAL_ON!r}",
            f"set by `python -m rehearsal` alone, to {cluster_env.REHEARSAL_ON!r}",
        )
    return True
