"""PKI and secrets: the certificate covers both supplier names, and no secret is plain in state."""

from __future__ import annotations

from infra.components.pki import supplier_dns_names
from tests.support.engine import PRIVATE_KEY_PREFIX, REGISTRY_TOKEN, SUPPLIER_KEY
from tests.support.stack_run import SECRET, StackRun


def test_the_server_certificate_covers_both_services_short_and_long(
    default_stack: StackRun,
) -> None:
    request = default_stack.one("tls:index/certRequest:CertRequest")
    names = request["inputs"]["dnsNames"]
    for service in ("supplier-api", "supplier-api-alias"):
        for name in (
            service,
            f"{service}.procurement-analyst",
            f"{service}.procurement-analyst.svc",
            f"{service}.procurement-analyst.svc.cluster.local",
        ):
            assert name in names, f"{request['urn']} does not cover {name}"
    assert names == supplier_dns_names("procurement-analyst")


def test_the_server_certificate_is_signed_by_the_stack_ca_for_server_auth(
    default_stack: StackRun,
) -> None:
    ca = default_stack.one("tls:index/selfSignedCert:SelfSignedCert")
    assert ca["inputs"]["isCaCertificate"] is True, ca["urn"]
    assert "cert_signing" in ca["inputs"]["allowedUses"], ca["urn"]
    cert = default_stack.one("tls:index/locallySignedCert:LocallySignedCert")
    assert "server_auth" in cert["inputs"]["allowedUses"], cert["urn"]
    assert ca["urn"] in cert["dependencies"], cert["urn"]
    assert cert["inputs"]["caPrivateKeyPem"] == SECRET, (
        f"{cert['urn']} holds the CA key in plain text"
    )


def test_the_secrets_hold_their_items_as_secret_values(default_stack: StackRun) -> None:
    secrets = {
        s["inputs"]["metadata"]["name"]: s
        for s in default_stack.of_type("kubernetes:core/v1:Secret")
    }
    assert secrets["supplier-key"]["inputs"]["stringData"] == {"api-key": SECRET}
    assert secrets["supplier-tls"]["inputs"]["stringData"] == {"tls.crt": SECRET, "tls.key": SECRET}
    assert secrets["supplier-tls"]["inputs"]["type"] == "kubernetes.io/tls"
    for secret in secrets.values():
        assert {"data", "stringData"} <= set(secret["additional_secret_outputs"]), (
            f"{secret['urn']} would keep what the API server returns in plain text"
        )


def test_the_key_and_private_keys_are_secret_outputs(default_stack: StackRun) -> None:
    password = default_stack.one("random:index/randomPassword:RandomPassword")
    assert "result" in password["additional_secret_outputs"], password["urn"]
    assert password["inputs"]["length"] >= 32, password["urn"]
    for key in default_stack.of_type("tls:index/privateKey:PrivateKey"):
        assert "privateKeyPem" in key["additional_secret_outputs"], key["urn"]


def test_the_registry_password_is_secret(default_stack: StackRun) -> None:
    for image in default_stack.of_type("docker-build:index:Image"):
        assert image["inputs"]["registries"] == SECRET, (
            f"{image['urn']} has the registry token in plain text"
        )


def test_the_ca_bundle_is_public_and_named_as_clients_expect(default_stack: StackRun) -> None:
    bundle = default_stack.one("kubernetes:core/v1:ConfigMap")
    assert bundle["inputs"]["metadata"]["name"] == "supplier-ca"
    assert set(bundle["inputs"]["data"]) == {"ca.crt"}, bundle["urn"]


def test_no_stack_output_carries_a_secret_value(default_stack: StackRun) -> None:
    text = repr(default_stack.outputs)
    assert SUPPLIER_KEY not in text and PRIVATE_KEY_PREFIX not in text


def test_no_secret_value_reaches_the_recorded_inputs(default_stack: StackRun) -> None:
    import json

    text = json.dumps(default_stack.resources)
    for value in (SUPPLIER_KEY, PRIVATE_KEY_PREFIX, REGISTRY_TOKEN):
        assert value not in text, (
            f"a secret value ({value}...) is in the recorded inputs in plain text"
        )
