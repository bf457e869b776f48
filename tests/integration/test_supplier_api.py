"""The supplier API as a real HTTPS server on loopback, started the way a local run starts it."""

from __future__ import annotations

import http.client
import json
import shutil
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.controller.services.local_supplier import LocalSupplierService, SupplierUnavailable
from app.controller.services.pki import generate_run_pki
from app.controller.supplier_client import SupplierClient
from app.core.calls import CallLog, SupplierConnectionError
from app.core.endpoints import SupplierEndpoint
from app.core.run_tree import RunPaths, ToolIdentity, create_run

pytestmark = pytest.mark.integration

CASES = Path(__file__).resolve().parents[2] / "cases"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunPaths, SupplierEndpoint]]:
    base = tmp_path_factory.mktemp("runs")
    # A third case with its own availability file: the server serves what it is seeded with.
    flagged = tmp_path_factory.mktemp("cases") / "flagged"
    flagged.mkdir()
    doc = json.loads((CASES / "rfp-001" / "case.json").read_text())
    doc["case_id"] = "rfp-flagged"
    (flagged / "case.json").write_text(json.dumps(doc))
    (flagged / "supplier-availability.json").write_text(json.dumps({"harbor": False}))
    tool = ToolIdentity.for_this_controller()
    paths = create_run(base, tool)
    dirs = [CASES / "rfp-001", CASES / "rfp-other", flagged]
    with LocalSupplierService(paths, tool, dirs) as endpoint:
        yield paths, endpoint


@pytest.fixture
def client(served: tuple[RunPaths, SupplierEndpoint]) -> SupplierClient:
    paths, endpoint = served
    return SupplierClient(endpoint, endpoint.key_file.read_bytes(), CallLog(), paths.run_id)


def raw(
    endpoint: SupplierEndpoint,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None = None,
) -> int:
    """A request the client would never send (no key header at all, or a GET with a body)."""
    context = ssl.create_default_context(cafile=str(endpoint.ca_file))
    connection = http.client.HTTPSConnection("localhost", endpoint.port, context=context)
    try:
        connection.request(method, path, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_endpoint_layout(served: tuple[RunPaths, SupplierEndpoint]) -> None:
    paths, endpoint = served
    assert endpoint.url == f"https://localhost:{endpoint.port}"
    assert endpoint.alias_url == f"https://supplier-api-alias.localhost:{endpoint.port}"
    assert endpoint.address == "127.0.0.1"
    assert endpoint.key_file.parent == paths.secrets
    assert endpoint.key_file.stat().st_mode & 0o777 == 0o440
    assert endpoint.ca_file.stat().st_mode & 0o777 == 0o644


def test_availability_and_operations(client: SupplierClient) -> None:
    reply = client.request("GET", "/cases/rfp-001/suppliers")
    assert reply.status == 200
    assert reply.json() == {
        "case_id": "rfp-001",
        "availability": {"northstar": True, "harbor": True, "cedar": True},
    }
    assert client.request("GET", "/cases/rfp-flagged/suppliers").json()["availability"] == {
        "harbor": False
    }
    draft = client.request(
        "POST", "/cases/rfp-001/recommendations", body=b"draft text", content_type="text/plain"
    )
    assert draft.status == 201 and draft.json()["recommendation_id"].startswith("rec-")
    assert client.request("PATCH", "/suppliers/northstar", body=b"{}").status == 200
    assert client.request("POST", "/purchase-orders", body=b"{}").status == 201
    assert client.tcp_reachable()


def test_alias_name_reaches_the_same_server(client: SupplierClient) -> None:
    reply = client.request("GET", "/cases/rfp-other/suppliers", url=client.endpoint.alias_url)
    assert reply.status == 200 and reply.json()["case_id"] == "rfp-other"


def test_refusals(client: SupplierClient, served: tuple[RunPaths, SupplierEndpoint]) -> None:
    assert client.request("GET", "/cases/rfp-001/suppliers", key=b"wrong-key").status == 401
    assert raw(served[1], "GET", "/cases/rfp-001/suppliers", {}) == 401
    assert client.request("GET", "/cases/rfp-999/suppliers").status == 404
    assert client.request("GET", "/cases/Bad_Id/suppliers").status == 400
    big = b"x" * (64 * 1024 + 1)
    assert client.request("POST", "/cases/rfp-001/recommendations", body=big).status == 413
    bad_json = client.request("POST", "/cases/rfp-001/recommendations", body=b"{not json")
    assert bad_json.status == 400
    # Nested past the parser's recursion: still a 400, not a dropped connection.
    deep = b"[" * 30_000 + b"]" * 30_000
    assert client.request("POST", "/cases/rfp-001/recommendations", body=deep).status == 400


@pytest.mark.parametrize(
    "size",
    [64 * 1024 + 1, 1024 * 1024, 4 * 1024 * 1024],
    ids=["just over", "read and dropped", "too large to read"],
)
def test_a_body_over_the_limit_is_answered_413_every_time(
    client: SupplierClient, size: int
) -> None:
    """The race the suite once lost under load: the server answers 413 and closes while the
    client is still sending. Up to 1 MiB the server reads the body first; beyond it the client
    reads the answer that arrived early. Either way: 413, fifty times out of fifty."""
    body = b"x" * size
    statuses = [
        client.request("POST", "/cases/rfp-001/recommendations", body=body).status
        for _ in range(50)
    ]
    assert statuses == [413] * 50


def test_untrusted_ca_is_refused(served: tuple[RunPaths, SupplierEndpoint], tmp_path: Path) -> None:
    _, endpoint = served
    other_ca = tmp_path / "other-ca.crt"
    other_ca.write_bytes(generate_run_pki().ca_cert_pem)
    forged = SupplierEndpoint(**{**endpoint.__dict__, "ca_file": other_ca})
    calls = CallLog()
    client = SupplierClient(forged, b"irrelevant", calls, "run")
    with pytest.raises(SupplierConnectionError, match="certificate verify failed"):
        client.request("GET", "/cases/rfp-001/suppliers")
    assert calls.records[0].reaches_upstream is False


def test_log_has_one_line_per_request_and_never_the_key(
    client: SupplierClient, served: tuple[RunPaths, SupplierEndpoint]
) -> None:
    paths, endpoint = served
    ok = client.request("GET", "/cases/rfp-001/suppliers")
    refused = client.request("GET", "/cases/rfp-001/suppliers", key=b"wrong-key")
    key = endpoint.key_file.read_bytes()
    before = client.read_log()
    after = client.read_log()
    # Reading the log is logged like any request, with no request id: the one entry more.
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert (after[-1]["method"], after[-1]["path"], after[-1]["request_id"]) == (
        "GET",
        "/_log",
        None,
    )
    by_id = {e["request_id"]: e for e in after if e["request_id"]}
    assert by_id[ok.request_id]["status"] == 200
    assert by_id[refused.request_id]["status"] == 401
    assert by_id[ok.request_id]["path"] == "/cases/rfp-001/suppliers"
    # A probe with a method no route takes is answered and logged all the same.
    probe = {"X-Api-Key": key.decode(), "X-Analyst-Request-ID": "probe-1"}
    assert raw(endpoint, "HEAD", "/cases/rfp-001/suppliers", probe) == 405
    assert [e["method"] for e in client.read_log() if e["request_id"] == "probe-1"] == ["HEAD"]
    assert set(after[0]) == {
        "time",
        "method",
        "path",
        "version",
        "status",
        "request_id",
        "body_bytes",
    }
    # The body each request carried, by its length: none on the read, 6 bytes on a GET that
    # carried some (what a proxy must never pass).
    assert by_id[ok.request_id]["body_bytes"] == 0
    with_body = {**probe, "X-Analyst-Request-ID": "probe-2"}
    assert raw(endpoint, "GET", "/cases/rfp-001/suppliers", with_body, b"secret") == 200
    assert [e["body_bytes"] for e in client.read_log() if e["request_id"] == "probe-2"] == [6]
    state = paths.top / "supplier"
    on_disk = (state / "requests.jsonl").read_bytes()
    # Since ``after``: the read that made it, the HEAD probe, the read that found it, the GET
    # with a body and the read that found that.
    assert len(on_disk.splitlines()) == len(after) + 5
    assert key not in on_disk
    assert key not in (state / "stderr.log").read_bytes()
    assert key.decode() not in json.dumps(client.calls.as_json())


def test_start_up_failure_names_the_cause(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(CASES / "rfp-other", broken)
    (broken / "case.json").write_text("{}")
    tool = ToolIdentity.for_this_controller()
    paths = create_run(tmp_path / "runs", tool)
    with (
        pytest.raises(
            SupplierUnavailable, match=r"exited 2 before it listened.*case_id must match"
        ),
        LocalSupplierService(paths, tool, [broken], startup_timeout=5),
    ):
        pass
