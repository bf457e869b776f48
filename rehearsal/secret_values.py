"""The values of the stack's Secrets and CA ConfigMap, made for one rehearsal.

The program makes its own at deploy time (pulumi-tls, pulumi-random); the rendered objects
hold "<redacted>" slots. The rehearsal makes values for the same names the same way (a CA, a
server certificate for every name `supplier_dns_names` gives, a 48-character key) and fills the
slots. They exist in this process's memory and in the rehearsal's private tmpfs only.
"""

from __future__ import annotations

import secrets
import string
from dataclasses import dataclass
from typing import Final

from app.controller.services.pki import generate_run_pki
from app.core import cluster_env as env
from infra.components.pki import SUPPLIER_KEY_LENGTH, supplier_dns_names

from .objects import Manifest, StackUnderRehearsal

KEY_ALPHABET: Final = string.ascii_letters + string.digits
REDACTED: Final = "<redacted>"


@dataclass(frozen=True)
class ObjectData:
    """The files a Secret or ConfigMap volume projects: key -> bytes."""

    kind: str
    name: str
    data: dict[str, bytes]


def make_values(stack: StackUnderRehearsal) -> dict[tuple[str, str], ObjectData]:
    """Every Secret and ConfigMap of the stack with its data, the redacted slots filled."""
    pki = generate_run_pki(dns_names=tuple(supplier_dns_names(stack.namespace)), ip_addresses=())
    key = "".join(secrets.choice(KEY_ALPHABET) for _ in range(SUPPLIER_KEY_LENGTH))
    made = {
        (env.SUPPLIER_KEY_SECRET, env.SUPPLIER_KEY_ITEM): key.encode(),
        (env.SUPPLIER_TLS_SECRET, "tls.crt"): pki.server_cert_pem,
        (env.SUPPLIER_TLS_SECRET, "tls.key"): pki.server_key_pem,
        (env.SUPPLIER_CA_CONFIGMAP, env.SUPPLIER_CA_ITEM): pki.ca_cert_pem,
    }
    values: dict[tuple[str, str], ObjectData] = {}
    for manifest in stack.objects:
        kind = manifest["kind"]
        if kind not in ("Secret", "ConfigMap"):
            continue
        name = manifest["metadata"]["name"]
        values[(kind, name)] = ObjectData(kind, name, _filled(manifest, made))
    return values


def _filled(manifest: Manifest, made: dict[tuple[str, str], bytes]) -> dict[str, bytes]:
    name = manifest["metadata"]["name"]
    field = "stringData" if manifest["kind"] == "Secret" else "data"
    data: dict[str, bytes] = {}
    for item, value in (manifest.get(field) or {}).items():
        if (name, item) in made:
            data[item] = made[(name, item)]
        elif isinstance(value, str) and not value.startswith("<"):
            data[item] = value.encode()
        else:
            raise ValueError(
                f"{manifest['kind']} {name}: the rehearsal has no value for {field}.{item}"
            )
    return data
