"""PKI and secrets: a CA, the supplier's server certificate, and the supplier key, stored as the
Secrets and ConfigMap the pods mount, and kept secret in Pulumi state."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random
import pulumi_tls as tls

from app.core import cluster_env as env

from ..pod_specs import labels

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


class SupplierSecrets(pulumi.ComponentResource):
    """The supplier's key, its TLS pair and the CA bundle clients verify it with."""

    ca_cert_pem: pulumi.Output[str]
    supplier_key: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        namespace: pulumi.Output[str],
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:pki:SupplierSecrets", name, None, opts)
        self._child = pulumi.ResourceOptions(parent=self)
        self._k8s = pulumi.ResourceOptions(parent=self, provider=provider)
        ca_key, ca_cert = self._create_ca(name)
        server_key, server_cert = self._create_server_cert(name, namespace, ca_key, ca_cert)
        api_key = random.RandomPassword(
            f"{name}-api-key", length=SUPPLIER_KEY_LENGTH, special=False, opts=self._child
        )
        self.ca_cert_pem = ca_cert.cert_pem
        self.supplier_key = pulumi.Output.secret(api_key.result)
        self._store(name, namespace, server_key, server_cert)
        self.register_outputs({"ca_cert_pem": self.ca_cert_pem, "supplier_key": self.supplier_key})

    def _create_ca(self, name: str) -> tuple[tls.PrivateKey, tls.SelfSignedCert]:
        key = tls.PrivateKey(
            f"{name}-ca-key", algorithm="ECDSA", ecdsa_curve="P256", opts=self._child
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
            opts=self._child,
        )
        return key, cert

    def _create_server_cert(
        self,
        name: str,
        namespace: pulumi.Output[str],
        ca_key: tls.PrivateKey,
        ca_cert: tls.SelfSignedCert,
    ) -> tuple[tls.PrivateKey, tls.LocallySignedCert]:
        key = tls.PrivateKey(
            f"{name}-server-key", algorithm="ECDSA", ecdsa_curve="P256", opts=self._child
        )
        request = tls.CertRequest(
            f"{name}-server-csr",
            private_key_pem=key.private_key_pem,
            subject={
                "common_name": namespace.apply(
                    lambda ns: env.service_host(env.SUPPLIER_SERVICE, ns)
                )
            },
            dns_names=namespace.apply(supplier_dns_names),
            opts=self._child,
        )
        cert = tls.LocallySignedCert(
            f"{name}-server",
            cert_request_pem=request.cert_request_pem,
            ca_private_key_pem=ca_key.private_key_pem,
            ca_cert_pem=ca_cert.cert_pem,
            validity_period_hours=SERVER_VALIDITY_HOURS,
            early_renewal_hours=EARLY_RENEWAL_HOURS,
            allowed_uses=["server_auth", "digital_signature", "key_encipherment"],
            opts=self._child,
        )
        return key, cert

    def _store(
        self,
        name: str,
        namespace: pulumi.Output[str],
        server_key: tls.PrivateKey,
        server_cert: tls.LocallySignedCert,
    ) -> None:
        # Output.secret marks the values secret before they reach the Secret's inputs, and
        # additional_secret_outputs keeps what the API server echoes back secret in state too.
        secret_opts = pulumi.ResourceOptions.merge(
            self._k8s, pulumi.ResourceOptions(additional_secret_outputs=["data", "stringData"])
        )
        k8s.core.v1.Secret(
            f"{name}-key",
            metadata={
                "name": env.SUPPLIER_KEY_SECRET,
                "namespace": namespace,
                "labels": labels("supplier-api"),
            },
            type="Opaque",
            string_data={env.SUPPLIER_KEY_ITEM: self.supplier_key},
            opts=secret_opts,
        )
        k8s.core.v1.Secret(
            f"{name}-tls",
            metadata={
                "name": env.SUPPLIER_TLS_SECRET,
                "namespace": namespace,
                "labels": labels("supplier-api"),
            },
            type="kubernetes.io/tls",
            string_data={
                "tls.crt": pulumi.Output.secret(server_cert.cert_pem),
                "tls.key": pulumi.Output.secret(server_key.private_key_pem),
            },
            opts=secret_opts,
        )
        k8s.core.v1.ConfigMap(
            f"{name}-ca-bundle",
            metadata={
                "name": env.SUPPLIER_CA_CONFIGMAP,
                "namespace": namespace,
                "labels": labels("analyst"),
            },
            data={env.SUPPLIER_CA_ITEM: self.ca_cert_pem},
            opts=self._k8s,
        )
