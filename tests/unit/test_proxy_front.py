"""The front of a role's proxy, as pure functions: what it reads from a role's bytes and what it
decides, without a socket."""

from __future__ import annotations

import pytest

from app.tools.nono.front import (
    FrontPolicy,
    MalformedRequest,
    Refusal,
    head_refusal,
    parse_head,
    refusal_response,
    request_id,
    response_body_length,
    response_status,
    shape_refusal,
    upstream_request,
)

RUN = "0123456789abcdef0123456789abcdef"
POLICY = FrontPolicy(
    prefix="supplier",
    pairs=frozenset(
        {("GET", "/cases/rfp-001/suppliers"), ("POST", "/cases/rfp-001/recommendations")}
    ),
    once=frozenset({("POST", "/cases/rfp-001/recommendations")}),
    inject_header="X-Api-Key",
    max_connections=8,
)


def head(line: str, *headers: str) -> bytes:
    return "\r\n".join([line, *headers, "", ""]).encode("latin-1")


def decide(line: str, *headers: str) -> Refusal | None:
    return head_refusal(POLICY, parse_head(head(line, *headers)))


@pytest.mark.parametrize(
    ("line", "refusal"),
    [
        ("GET /supplier/cases/rfp-001/suppliers HTTP/1.1", None),
        ("POST /supplier/cases/rfp-001/recommendations HTTP/1.1", None),
        # Tunnels, to the upstream's host on any port and to any loopback name.
        ("CONNECT localhost:40000 HTTP/1.1", Refusal.TUNNEL),
        ("CONNECT 127.0.0.1:40000 HTTP/1.1", Refusal.TUNNEL),
        ("CONNECT [::1]:40000 HTTP/1.1", Refusal.TUNNEL),
        ("CONNECT localhost.:40000 HTTP/1.1", Refusal.TUNNEL),
        ("CONNECT /supplier/cases/rfp-001/suppliers HTTP/1.1", Refusal.TUNNEL),
        # Absolute URIs, the supplier's own among them.
        ("GET http://localhost:40000/moto-api/data.json HTTP/1.1", Refusal.ABSOLUTE_FORM),
        (
            "GET http://127.0.0.1:40000/supplier/cases/rfp-001/suppliers HTTP/1.1",
            Refusal.ABSOLUTE_FORM,
        ),
        ("GET https://localhost/cases/rfp-001/suppliers HTTP/1.1", Refusal.ABSOLUTE_FORM),
        ("GET localhost:40000 HTTP/1.1", Refusal.ABSOLUTE_FORM),
        ("OPTIONS * HTTP/1.1", Refusal.ASTERISK_FORM),
        # Origin-form, but not a listed pair, or a listed path spelled another way.
        ("PATCH /supplier/cases/rfp-001/suppliers HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /supplier/cases/rfp-other/suppliers HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /cases/rfp-001/suppliers HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /supplier/cases/rfp-001/suppliers?x=1 HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /supplier/cases/rfp-001/suppliers/ HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /supplier//cases/rfp-001/suppliers HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /supplier/cases/rfp-001/../rfp-001/suppliers HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /supplier/cases/rfp%2D001/suppliers HTTP/1.1", Refusal.NOT_LISTED),
        ("GET /suppliers/cases/rfp-001/suppliers HTTP/1.1", Refusal.NOT_LISTED),
    ],
)
def test_only_an_origin_form_request_for_a_listed_pair_passes(
    line: str, refusal: Refusal | None
) -> None:
    assert decide(line) is refusal


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /supplier/x HTTP/1.1\r\n",  # no blank line
        b"GET  /supplier/x HTTP/1.1\r\n\r\n",
        b"get /supplier/x HTTP/1.1\r\n\r\n",
        b"GET /supplier/x HTTP/2\r\n\r\n",
        b"GET /supplier/\xff HTTP/1.1\r\n\r\n",
        b"GET /supplier/x HTTP/1.1\r\n folded: header\r\n\r\n",
        b"GET /supplier/x HTTP/1.1\r\nX-Api-Key: a\r\nx-api-key: b\r\n\r\n",
        b"GET /supplier/x HTTP/1.1\r\nno colon\r\n\r\n",
        b"GET /supplier/x HTTP/1.1\r\nBad\x01: value\r\n\r\n",
        b"GET /supplier/x HTTP/1.1\r\n" + b"H: v\r\n" * 33 + b"\r\n",
        b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n",
    ],
)
def test_a_head_outside_what_http_1_1_allows_is_malformed(raw: bytes) -> None:
    with pytest.raises(MalformedRequest):
        parse_head(raw)


def test_a_body_of_unknown_or_unplain_length_is_malformed() -> None:
    line = "POST /supplier/cases/rfp-001/recommendations HTTP/1.1"
    with pytest.raises(MalformedRequest):
        parse_head(head(line, "Transfer-Encoding: chunked")).body_length()
    with pytest.raises(MalformedRequest):
        parse_head(head(line, "Content-Length: +5")).body_length()
    assert parse_head(head(line, "Content-Length: 12")).body_length() == 12
    assert parse_head(head(line)).body_length() == 0


def test_only_a_request_id_of_this_run_is_taken() -> None:
    line = "GET /supplier/cases/rfp-001/suppliers HTTP/1.1"
    taken = parse_head(head(line, f"X-Analyst-Request-ID: {RUN}-reader-3"))
    assert request_id(taken, RUN) == f"{RUN}-reader-3"
    for given in (f"{'f' * 32}-reader-3", f"{RUN}-reader-3x", f"{RUN}-READER-3", "anything"):
        other = parse_head(head(line, f"X-Analyst-Request-ID: {given}"))
        assert request_id(other, RUN) is None
    assert request_id(None, RUN) is None


def test_nono_gets_a_head_of_the_fronts_making_and_the_writes_type_its_own() -> None:
    role_head = parse_head(
        head(
            "POST /supplier/cases/rfp-001/recommendations HTTP/1.1",
            "Host: evil.example",
            "X-Api-Key: placeholder",
            "Proxy-Authorization: Basic bm9ubzp0b2tlbg==",
            "Content-Type: application/x-www-form-urlencoded; anything=the-roles",
            "Content-Length: 5",
            "X-Forwarded-For: 10.0.0.1",
            "X-Analyst-Request-ID: forged",
        )
    )
    sent = upstream_request(
        POLICY, role_head, b"draft", request_id=f"{RUN}-writer-9", host="127.0.0.1:4000"
    )
    assert sent == (
        b"POST /supplier/cases/rfp-001/recommendations HTTP/1.1\r\n"
        b"Host: 127.0.0.1:4000\r\n"
        b"X-Analyst-Request-ID: " + f"{RUN}-writer-9".encode() + b"\r\n"
        b"X-Api-Key: placeholder\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: 5\r\n"
        b"Connection: close\r\n\r\ndraft"
    )


def test_a_read_goes_on_with_no_body_length_or_type_and_never_with_a_body() -> None:
    line = "GET /supplier/cases/rfp-001/suppliers HTTP/1.1"
    read = parse_head(head(line, "X-Api-Key: placeholder", "Content-Length: 0"))
    sent = upstream_request(POLICY, read, b"", request_id=f"{RUN}-reader-1", host="h:1")
    assert sent == (
        b"GET /supplier/cases/rfp-001/suppliers HTTP/1.1\r\nHost: h:1\r\n"
        b"X-Analyst-Request-ID: " + f"{RUN}-reader-1".encode() + b"\r\n"
        b"X-Api-Key: placeholder\r\nConnection: close\r\n\r\n"
    )
    with pytest.raises(ValueError, match="carries no body"):
        upstream_request(POLICY, read, b"x", request_id=f"{RUN}-reader-1", host="h:1")


@pytest.mark.parametrize(
    ("headers", "refusal"),
    [
        ((), None),
        (("Content-Length: 0",), None),
        (("Content-Length: 60000",), Refusal.NOT_ITS_SHAPE),
        (("Content-Length: 1",), Refusal.NOT_ITS_SHAPE),
        (("Content-Length: 00",), Refusal.NOT_ITS_SHAPE),
        (("Content-Type: text/plain",), Refusal.NOT_ITS_SHAPE),
        (("Content-Type: text/plain", "Content-Length: 0"), Refusal.NOT_ITS_SHAPE),
        (("Transfer-Encoding: chunked",), Refusal.NOT_ITS_SHAPE),
        (("Transfer-Encoding: identity",), Refusal.NOT_ITS_SHAPE),
    ],
)
def test_a_read_with_a_body_its_length_or_its_type_is_not_its_shape(
    headers: tuple[str, ...], refusal: Refusal | None
) -> None:
    read = parse_head(head("GET /supplier/cases/rfp-001/suppliers HTTP/1.1", *headers))
    assert head_refusal(POLICY, read) is None
    assert shape_refusal(POLICY, read) is refusal


def test_the_once_only_write_alone_carries_a_body() -> None:
    write = parse_head(
        head(
            "POST /supplier/cases/rfp-001/recommendations HTTP/1.1",
            "Content-Type: text/plain",
            "Content-Length: 5",
        )
    )
    assert shape_refusal(POLICY, write) is None
    reads_only = FrontPolicy(
        prefix=POLICY.prefix,
        pairs=POLICY.pairs,
        once=frozenset(),
        inject_header=POLICY.inject_header,
        max_connections=8,
    )
    # The same write, not once-only: no body either.
    assert shape_refusal(reads_only, write) is Refusal.NOT_ITS_SHAPE
    answer = refusal_response(Refusal.NOT_ITS_SHAPE)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert answer.endswith(b"refused by the role's proxy: not-its-shape\n")


def test_the_fronts_answers_and_what_it_reads_of_nonos() -> None:
    answer = refusal_response(Refusal.TUNNEL)
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert answer.endswith(b"\r\n\r\nrefused by the role's proxy: tunnel\n")
    assert refusal_response(Refusal.CONNECTION_LIMIT).startswith(b"HTTP/1.1 503 ")
    assert response_status(b"HTTP/1.1 201 Created\r\n\r\n") == 201
    assert response_status(b"HTTP/1.1 2010\r\n\r\n") is None
    assert response_status(b"SSH-2.0\r\n\r\n") is None
    assert response_body_length(b"HTTP/1.1 200 OK\r\nContent-Length: 42\r\n\r\n") == 42
    assert response_body_length(b"HTTP/1.1 200 OK\r\n\r\n") is None
