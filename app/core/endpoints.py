"""Where the run's services are, as the controller and the checks must name them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple


@dataclass(frozen=True)
class SupplierEndpoint:
    """Where the supplier API is.

    ``url`` is the approved name; ``alias_url`` a second DNS name for the same server (the
    nono alias-host control). ``address``/``port`` are what ``url``'s host resolves to, for
    the network checks. ``key_file`` holds the real key and is mounted in no role.
    """

    url: str
    alias_url: str
    address: str
    port: int
    ca_file: Path
    key_file: Path


@dataclass(frozen=True)
class AwsCredentialFile:
    """The file that holds the controller's AWS credential (local: a shared credentials file;
    cluster: the Pod Identity token). It is the target of the 'cannot open' checks."""

    path: Path
    description: str  # "the AWS credential file" / "the Pod Identity token file"


class HostPort(NamedTuple):
    """Where the controller's AWS credentials come from (moto locally, the Pod Identity agent
    in the cluster), for the "cannot reach it directly" checks."""

    host: str
    port: int
