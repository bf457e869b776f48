"""PKI and secrets: a CA, the supplier's server certificate, and the supplier key, stored as the
Secrets and ConfigMap the pods mount, and kept secret in Pulumi state."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import pulumi_tls as tls

from app.core import cluster_env as env

from ..manifests import (
    supplier_ca_config_map,
    supplier_config_checksum,
    supplier_key_secret,
    supplier_tls_secret,
)
from .options import child_options

CA_VALIDITY_HOURS = 365 * 24
SERVER_VALIDITY_HOURS = 90 * 24
# A `pulumi up` inside this window before expiry issues a new certificate.
EARLY_RENEWAL_HOURS = 30 * 24
SUPPLIER_KEY_LENGTH = 48


def supplier_dns_names(namespace: str) -> list[str]:
    """Every name a client may use for the supplier API: both Services, short to fully qualified."""
    return [
        name
        for service in (env.SUPPLIER_SERVICE, env.SUPPLIER_ALIAS_SERVICE)
        for name in (
            service,
            f"{service}.{namespace}",
            f"{service}.{namespace}.svc",
            env.service_host(service, namespace),
        )
    ]


@dataclass(frozen=True)
class SecretSettings:
    """The namespace the Secrets live in, whose Service names the certificate covers."""

    namespace: str


class SupplierSecrets(pulumi.ComponentResource):
    """The supplier's key, its TLS pair and the CA bundle clients verify it with."""

    ca_cert_pem: pulumi.Output[str]
    supplier_key: pulumi.Output[str]
    config_checksum: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: SecretSettings,
        *,
        kubernetes: k8s.Provider,
        tls_provider: tls.Provider,
        random_provider: random.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:pki:SupplierSecrets", name, None, opts)
        self._tls = pulumi.ResourceOptions(parent=self, provider=tls_provider)
        # The Secrets and ConfigMap wait for what the component waits for (the namespace).
        self._k8s = child_options(self, opts, kubernetes)
        ca_key, ca_cert = self._create_ca(name)
        namespace = settings.namespace
        server_key, server_cert = self._create_server_cert(name, namespace, ca_key, ca_cert)
        api_key = random.RandomPassword(
            f"{name}-api-key",
            length=SUPPLIER_KEY_LENGTH,
            special=False,
            opts=pulumi.ResourceOptions(parent=self, provider=random_provider),
        )
        self.ca_cert_pem = ca_cert.cert_pem
        self.supplier_key = pulumi.Output.secret(api_key.result)
        # NOTE: the key's SHA-256 is deliberately not secret: it goes into the supplier pod's
        # annotation so a new key restarts the pod. A digest of a 48-character random key
        # reveals nothing of it.
        key_digest = pulumi.Output.unsecret(
            api_key.result.apply(lambda key: hashlib.sha256(key.encode()).hexdigest())
        )
        self.config_checksum = pulumi.Output.all(
            server_cert.cert_pem, ca_cert.cert_pem, key_digest
        ).apply(
            lambda values: supplier_config_checksum(
                cert_pem=values[0], ca_pem=values[1], key_digest=values[2]
            )
        )
        self._store(name, namespace, server_key, server_cert)
        self.register_outputs(
            {
                "ca_cert_pem": self.ca_cert_pem,
                "supplier_key": self.supplier_key,
                "config_checksum": self.config_checksum,
            }
        )

    def _create_ca(self, name: str) -> tuple[tls.PrivateKey, tls.SelfSignedCert]:
        key = tls.PrivateKey(
            f"{name}-ca-key", algorithm="ECDSA", ecdsa_curve="P256", opts=self._tls
        )
        cert = tls.SelfSignedCert(
            f"{name}-ca",
            private_key_pem=key.private_key_pem,
            is_ca_certificate=True,
            subject={
                "common_name": "procurement-analyst supplier CA",
                "organization": "procurement-analyst",
            },
            validity_period_hours=CA_VALIDITY_HOURS,
            early_renewal_hours=EARLY_RENEWAL_HOURS,
            allowed_uses=["cert_signing", "crl_signing", "digital_signature"],
            opts=self._tls,
        )
        return key, cert

    def _create_server_cert(
        self,
        name: str,
        namespace: str,
        ca_key: tls.PrivateKey,
        ca_cert: tls.SelfSignedCert,
    ) -> tuple[tls.PrivateKey, tls.LocallySignedCert]:
        key = tls.PrivateKey(
            f"{name}-server-key", algorithm="ECDSA", ecdsa_curve="P256", opts=self._tls
        )
        request = tls.CertRequest(
            f"{name}-server-csr",
            private_key_pem=key.private_key_pem,
            subject={"common_name": env.service_host(env.SUPPLIER_SERVICE, namespace)},
            dns_names=supplier_dns_names(namespace),
            opts=self._tls,
        )
        cert = tls.LocallySignedCert(
            f"{name}-server",
            cert_request_pem=request.cert_request_pem,
            ca_private_key_pem=ca_key.private_key_pem,
            ca_cert_pem=ca_cert.cert_pem,
            validity_period_hours=SERVER_VALIDITY_HOURS,
            early_renewal_hours=EARLY_RENEWAL_HOURS,
            allowed_uses=["server_auth", "digital_signature", "key_encipherment"],
            opts=self._tls,
        )
        return key, cert

    def _store(
        self,
        name: str,
        namespace: str,
        server_key: tls.PrivateKey,
        server_cert: tls.LocallySignedCert,
    ) -> None:
        # Output.secret marks the values secret before they reach the Secret's inputs, and
        # additional_secret_outputs keeps what the API server echoes back secret in state too.
        secret_opts = pulumi.ResourceOptions.merge(
            self._k8s, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
        )
        key = supplier_key_secret(namespace, self.supplier_key)
        k8s.core.v1.Secret(
            f"{name}-key",
            metadata=key["metadata"],
            type=key["type"],
            string_data=key["stringData"],
            opts=secret_opts,
        )
        pair = supplier_tls_secret(
            namespace,
            pulumi.Output.secret(server_cert.cert_pem),
            pulumi.Output.secret(server_key.private_key_pem),
        )
        k8s.core.v1.Secret(
            f"{name}-tls",
            metadata=pair["metadata"],
            type=pair["type"],
            string_data=pair["stringData"],
            opts=secret_opts,
        )
        bundle = supplier_ca_config_map(namespace, self.ca_cert_pem)
        k8s.core.v1.ConfigMap(
            f"{name}-ca-bundle", metadata=bundle["metadata"], data=bundle["data"], opts=self._k8s
        )
