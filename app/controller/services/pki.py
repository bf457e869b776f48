"""A certificate authority and a supplier server certificate made for one run, as PEM bytes.

The CA's private key is never returned: once the server certificate is signed nobody, not
even the controller, can mint another certificate this run's clients would trust.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SUPPLIER_DNS_NAMES = ("localhost", "supplier-api-alias.localhost")
SUPPLIER_IP_ADDRESSES = ("127.0.0.1",)
DEFAULT_VALIDITY = timedelta(days=1)
# Clock skew between the process that signs and the one that verifies must not make a fresh
# certificate "not yet valid".
_BACKDATE = timedelta(minutes=5)


@dataclass(frozen=True)
class RunPki:
    ca_cert_pem: bytes
    server_cert_pem: bytes
    server_key_pem: bytes  # secret: goes only to the server, through write_secret_file


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "confined procurement analyst"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def generate_run_pki(
    *,
    dns_names: tuple[str, ...] = SUPPLIER_DNS_NAMES,
    ip_addresses: tuple[str, ...] = SUPPLIER_IP_ADDRESSES,
    validity: timedelta = DEFAULT_VALIDITY,
) -> RunPki:
    """A fresh EC P-256 CA and a server certificate for the given names, valid for ``validity``."""
    now = datetime.now(UTC)
    not_before, not_after = now - _BACKDATE, now + validity

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("supplier API run CA")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        # path_length 0: this CA signs server certificates only, never another CA.
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(server_key.public_key()), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )

    return RunPki(
        ca_cert_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        server_cert_pem=server_cert.public_bytes(serialization.Encoding.PEM),
        server_key_pem=server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
