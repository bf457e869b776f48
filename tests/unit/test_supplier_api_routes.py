"""The supplier API's routing, seeded catalog and the run's PKI, without a server."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pytest
from cryptography import x509

from app.controller.services.pki import generate_run_pki
from app.supplier_api.catalog import CatalogError, load_case, load_catalog
from app.supplier_api.routes import match

CASES = Path(__file__).resolve().parents[2] / "cases"


@pytest.mark.parametrize(
    ("method", "path", "operation", "status"),
    [
        ("GET", "/cases/rfp-001/suppliers", "availability", 200),
        ("POST", "/cases/rfp-001/recommendations", "submit_draft", 200),
        ("PATCH", "/suppliers/northstar", "update_supplier", 200),
        ("POST", "/purchase-orders", "purchase_order", 200),
        ("GET", "/_log", "read_log", 200),
        ("GET", "/cases/RFP_1/suppliers", None, 400),
        ("GET", "/cases/..%2f/suppliers", None, 400),
        ("DELETE", "/cases/rfp-001/suppliers", None, 405),
        ("GET", "/cases/rfp-001/suppliers/extra", None, 404),
        ("GET", "/", None, 404),
    ],
)
def test_routes(method: str, path: str, operation: str | None, status: int) -> None:
    found = match(method, path)
    assert (found.operation, found.status) == (operation, status)


def test_catalog_defaults_to_every_supplier_available() -> None:
    case = load_case(CASES / "rfp-001")
    assert case.availability == {"northstar": True, "harbor": True, "cedar": True}


def test_catalog_reads_availability_file(tmp_path: Path) -> None:
    (tmp_path / "case.json").write_text((CASES / "rfp-001" / "case.json").read_text())
    (tmp_path / "supplier-availability.json").write_text(json.dumps({"harbor": False}))
    assert load_case(tmp_path).availability == {"harbor": False}


def test_catalog_refuses_bad_availability_and_duplicates(tmp_path: Path) -> None:
    (tmp_path / "case.json").write_text((CASES / "rfp-001" / "case.json").read_text())
    (tmp_path / "supplier-availability.json").write_text(json.dumps({"harbor": "yes"}))
    with pytest.raises(CatalogError, match="true or false"):
        load_case(tmp_path)
    with pytest.raises(CatalogError, match="seeded twice"):
        load_catalog([(CASES / "rfp-001", None), (CASES / "rfp-001", None)])


def test_catalog_serves_a_folder_under_another_id_and_refuses_a_bad_one() -> None:
    template = CASES / "rfp-other"
    catalog = load_catalog([(template, None), (template, "rfp-other-2")])
    assert set(catalog) == {"rfp-other", "rfp-other-2"}
    assert catalog["rfp-other-2"].supplier_ids == catalog["rfp-other"].supplier_ids == ("lumen",)
    with pytest.raises(CatalogError, match=r"--case-dir-as \.\./x: an id must match"):
        load_case(template, "../x")
    with pytest.raises(CatalogError, match="case rfp-other is seeded twice"):
        load_catalog([(template, None), (CASES / "rfp-001", "rfp-other")])


def test_pki_names_and_chain(tmp_path: Path) -> None:
    pki = generate_run_pki()
    cert = x509.load_pem_x509_certificate(pki.server_cert_pem)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost", "supplier-api-alias.localhost"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days <= 1
    # The server key matches the certificate (load_cert_chain checks); the handshake itself
    # is exercised against the real server in the integration tests.
    (tmp_path / "server.crt").write_bytes(pki.server_cert_pem)
    (tmp_path / "server.key").write_bytes(pki.server_key_pem)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
