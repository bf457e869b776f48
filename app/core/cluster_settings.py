"""The cluster-mode settings, parsed strictly into one typed object before anything is created.

Every variable the Job and EKS Pod Identity give the controller has one parser here, which says
what it accepts: the URLs (scheme, host, a port in range, nothing else), the files (a readable
regular file of bounded size, links followed as the kubelet mounts them), the CA (PEM that the
TLS library loads), the Pod Identity token (what botocore can send as a header), the credential
URI (what botocore's container provider accepts) and the AWS names. The run stops with the
first unusable variable (exit 2, its name and what it accepts); `doctor` in the pod shows every
one with the same parser and the same words.
"""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Generic, TypeVar
from urllib.parse import urlsplit

from app.core import cluster_env
from app.core.errors import BadInput

T = TypeVar("T")

# A supplier API key is a few dozen bytes; a CA bundle a few KiB; a projected token about one.
MAX_KEY_BYTES: Final = 4096
MAX_CA_BYTES: Final = 1024 * 1024
MAX_TOKEN_BYTES: Final = 64 * 1024

_BUCKET: Final = re.compile(r"^(?!.*\.\.)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION: Final = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$")
_ROLE_NAME: Final = re.compile(r"^[A-Za-z0-9+=,.@_-]{1,64}$")
_MODEL_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,2047}$")
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


class SettingUnusable(BadInput):
    """A cluster-mode variable is missing or unusable; the message names it."""

    def __init__(self, name: str, message: str, remedy: str) -> None:
        super().__init__(message, remedy)
        self.name = name


@dataclass(frozen=True)
class Endpoint:
    """A parsed service URL: the URL as given, and its scheme, host and port."""

    url: str
    scheme: str
    host: str
    port: int


# --- one parser per kind of value ------------------------------------------------------------


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


def _key_file(value: str) -> Path:
    read_key_file(Path(value))
    return Path(value)


def _ca_file(value: str) -> Path:
    data = read_setting_file(Path(value), MAX_CA_BYTES)
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=data.decode("ascii"))
    except (UnicodeDecodeError, ssl.SSLError):
        raise Unusable(
            "holds no PEM certificate",
            "a PEM file of the CA certificate that signed the supplier's certificate",
        ) from None
    return Path(value)


def _token_file(value: str) -> Path:
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


def _https_service(value: str) -> Endpoint:
    accepts = "an https://host[:port] URL and nothing more, as the Job sets it"
    endpoint = _url(value, ("https",), accepts)
    parts = urlsplit(value)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise Unusable("has a path, a query or a fragment", accepts)
    return endpoint


def _credentials_uri(value: str) -> Endpoint:
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


def _name(pattern: re.Pattern[str], what: str, accepts: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if not pattern.fullmatch(value):
            raise Unusable(f"is not {what}", accepts)
        return value

    return parse


def _destinations(value: str) -> tuple[tuple[str, int], ...]:
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


def _rehearsal_switch(value: str) -> bool:
    if value != cluster_env.REHEARSAL_ON:
        raise Unusable(
            f"is not {cluster_env.REHEARSAL_ON!r}",
            f"set by `python -m rehearsal` alone, to {cluster_env.REHEARSAL_ON!r}",
        )
    return True


@dataclass(frozen=True)
class Variable(Generic[T]):
    """One variable cluster mode reads: its name, what it is, and how it is parsed."""

    name: str
    what: str
    parse: Callable[[str], T]
    # Who sets it, for the remedy when it is missing.
    set_by: str = "the analyst Job sets it"
    # The value when it is not set at all, for a variable that may be left out.
    default: Callable[[], T] | None = None

    def value(self, environ: Mapping[str, str]) -> T:
        """The variable's value, parsed; SettingUnusable when it is missing or unusable."""
        text = environ.get(self.name)
        if text is None and self.default is not None:
            return self.default()
        if text is None or (not text and self.default is None):
            raise SettingUnusable(self.name, f"{self.name} is not set", self.set_by)
        try:
            return self.parse(text)
        except Unusable as error:
            raise SettingUnusable(
                self.name,
                f"{self.name}={text!r}: {error.problem}",
                f"{self.name} must be {error.accepts}",
            ) from None


POD_IDENTITY = (
    "EKS Pod Identity sets it: create the association for the analyst ServiceAccount before "
    "the pod starts (pulumi up does), and on a cluster without Auto Mode the "
    "eks-pod-identity-agent add-on"
)

BUCKET: Final = Variable(
    cluster_env.BUCKET,
    "an S3 bucket name",
    _name(
        _BUCKET,
        "an S3 bucket name",
        "3 to 63 lowercase letters, digits, dots and hyphens, a letter or digit at each end, "
        "no two dots together",
    ),
)
REGION: Final = Variable(
    cluster_env.REGION,
    "an AWS Region name",
    _name(_REGION, "an AWS Region name", "a Region name such as us-west-2"),
)
MODEL_ID: Final = Variable(
    cluster_env.MODEL_ID,
    "a Bedrock model id",
    _name(
        _MODEL_ID,
        "a Bedrock model id",
        "a model or inference profile id (letters, digits and . : / _ -), such as "
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ),
)
ROLE_NAME: Final = Variable(
    cluster_env.ROLE_NAME,
    "an IAM role name",
    _name(_ROLE_NAME, "an IAM role name", "1 to 64 letters, digits and + = , . @ _ -"),
)
SUPPLIER_URL: Final = Variable(
    cluster_env.SUPPLIER_API_URL, "the supplier Service's URL", _https_service
)
SUPPLIER_ALIAS_URL: Final = Variable(
    cluster_env.SUPPLIER_API_ALIAS_URL, "the supplier alias Service's URL", _https_service
)
SUPPLIER_KEY_FILE: Final = Variable(
    cluster_env.SUPPLIER_KEY_FILE, "the supplier key file", _key_file
)
SUPPLIER_CA_FILE: Final = Variable(
    cluster_env.SUPPLIER_CA_FILE, "the supplier's CA certificate file", _ca_file
)
CREDENTIALS_URI: Final = Variable(
    cluster_env.POD_IDENTITY_URI, "the Pod Identity credential URI", _credentials_uri,
    POD_IDENTITY,
)  # fmt: skip
TOKEN_FILE: Final = Variable(
    cluster_env.POD_IDENTITY_TOKEN_FILE, "the Pod Identity token file", _token_file,
    POD_IDENTITY,
)  # fmt: skip
REHEARSAL: Final = Variable(
    cluster_env.REHEARSAL, "the rehearsal switch", _rehearsal_switch, default=lambda: False
)

EGRESS_DENIED: Final[Variable[tuple[tuple[str, int], ...]]] = Variable(
    cluster_env.EGRESS_DENIED,
    "the destinations the pod's egress policy denies",
    _destinations,
    default=lambda: (),
)

VARIABLES: Final[tuple[Variable[Any], ...]] = (
    BUCKET,
    REGION,
    MODEL_ID,
    ROLE_NAME,
    SUPPLIER_URL,
    SUPPLIER_ALIAS_URL,
    SUPPLIER_KEY_FILE,
    SUPPLIER_CA_FILE,
    CREDENTIALS_URI,
    TOKEN_FILE,
    REHEARSAL,
    EGRESS_DENIED,
)


def problems(environ: Mapping[str, str]) -> list[SettingUnusable]:
    """Every variable that is missing (those first) or unusable."""
    found = []
    for variable in VARIABLES:
        try:
            variable.value(environ)
        except SettingUnusable as problem:
            found.append(problem)
    return sorted(found, key=lambda problem: not problem.message.endswith(" is not set"))


@dataclass(frozen=True)
class ClusterSettings:
    """Everything cluster mode reads from its environment, each value checked."""

    bucket: str
    region: str
    model_id: str
    role_name: str
    supplier: Endpoint
    supplier_alias: Endpoint
    supplier_key_file: Path
    supplier_ca_file: Path
    credentials_agent: Endpoint
    token_file: Path
    rehearsal: bool
    # Read here once, so a key file that cannot be used stops the run before anything exists.
    supplier_key: bytes = field(repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ClusterSettings:
        """The settings, or SettingUnusable for the first variable that is missing or unusable,
        naming the others that are too."""
        found = problems(environ)
        if found:
            first, *others = found
            if not others:
                raise first
            names = ", ".join(problem.name for problem in others)
            raise SettingUnusable(
                first.name,
                first.message,
                f"{first.remedy} (also unusable: {names}; `doctor` shows each)",
            )
        key_file = SUPPLIER_KEY_FILE.value(environ)
        try:
            key = read_key_file(key_file)
        except Unusable as error:  # it changed since it was checked a moment ago
            raise SettingUnusable(
                SUPPLIER_KEY_FILE.name, f"{SUPPLIER_KEY_FILE.name}: {error.problem}", ""
            ) from None
        return cls(
            bucket=BUCKET.value(environ),
            region=REGION.value(environ),
            model_id=MODEL_ID.value(environ),
            role_name=ROLE_NAME.value(environ),
            supplier=SUPPLIER_URL.value(environ),
            supplier_alias=SUPPLIER_ALIAS_URL.value(environ),
            supplier_key_file=key_file,
            supplier_ca_file=SUPPLIER_CA_FILE.value(environ),
            credentials_agent=CREDENTIALS_URI.value(environ),
            token_file=TOKEN_FILE.value(environ),
            rehearsal=REHEARSAL.value(environ),
            supplier_key=key,
        )
