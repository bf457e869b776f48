"""The strict front of a role's proxy: what it accepts, read from the bytes a role sent.

A role's one reachable listener is this front, not nono's: nono-py 0.16.0 adds each route's
upstream host to its proxy's CONNECT allowlist for every port and forwards an absolute-URI
request to that host (docs/notes/nono-proxy-upstream-host.md). The front accepts an
origin-form request for one of the role's listed method/path pairs and nothing else; a write
(any method but GET) listed as once-only passes only with the very body the controller
verified, and only once per run. Each pair passes only in its declared shape: a read (any pair
but a once-only write) carries no body, no body's length but 0, no Transfer-Encoding and no
Content-Type, and what nono gets is a head of the front's own making, never the role's headers
but the placeholder. Everything here is pure: bytes in, a decision out; the
proxy host (role_front.py) does the reading and the writing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

# A role's request head, its body, and what may come back through the front.
MAX_HEAD_BYTES: Final = 8 * 1024
MAX_HEADERS: Final = 32
MAX_BODY_BYTES: Final = 64 * 1024
MAX_RESPONSE_BYTES: Final = 1024 * 1024
# What a front keeps per role and run; a record beyond it is counted as dropped.
MAX_RECORDS: Final = 2048
# What a record keeps of the target a role named (the head is printable ASCII by then).
MAX_RECORDED_TARGET: Final = 256

# Visible ASCII only: a target or a header value with anything else is malformed.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")
_METHOD = re.compile(r"[A-Z]{1,16}")
_TARGET = re.compile(r"[\x21-\x7e]{1,2048}")
_VALUE = re.compile(r"[\x20-\x7e\t]{0,1024}")
_LENGTH = re.compile(r"[0-9]{1,7}")
# A path the front compares with its rules: plain segments, no query, no escapes, no dot
# segments, so one path has one spelling.
_PLAIN_PATH = re.compile(r"(/[A-Za-z0-9._~-]+)+")
REQUEST_ID_HEADER: Final = "x-analyst-request-id"
# The type the front gives the once-only write's verified body, whatever the role said: the
# writer's draft is plain text (app/core/draft.py).
WRITE_CONTENT_TYPE: Final = "text/plain; charset=utf-8"
# What only a write may carry: a read with any of these is refused, not stripped.
_BODY_HEADERS: Final = ("content-type", "transfer-encoding")

Form = Literal["origin", "tunnel", "absolute", "asterisk"]


class Refusal(StrEnum):
    """Why the front answered a request itself, rather than passing it to nono."""

    TUNNEL = "tunnel"  # CONNECT: a tunnel carries anything past the method/path rules
    ABSOLUTE_FORM = "absolute-form"  # GET http://host:port/...: a request for another server
    ASTERISK_FORM = "asterisk-form"
    NOT_LISTED = "not-listed"  # origin-form, but not one of the role's method/path pairs
    # A listed pair in a shape it does not have: a read with a body, a body's length or type.
    NOT_ITS_SHAPE = "not-its-shape"
    NOT_VERIFIED = "draft-not-verified"  # a once-only write before the controller verified it
    ALREADY_SENT = "draft-already-posted"  # a once-only write a second time
    BODY_DIFFERS = "draft-differs"  # a once-only write whose body is not the verified one
    MALFORMED = "malformed"
    TOO_LARGE = "too-large"
    TIMEOUT = "timeout"  # no whole request within the deadline
    INCOMPLETE = "incomplete"  # the role closed the connection before a whole request
    CONNECTION_LIMIT = "connection-limit"
    UPSTREAM_FAILED = "upstream-failed"  # nono's listener gave no whole answer


STATUS: Final[dict[Refusal, int | None]] = {
    Refusal.TUNNEL: 403,
    Refusal.ABSOLUTE_FORM: 403,
    Refusal.ASTERISK_FORM: 403,
    Refusal.NOT_LISTED: 403,
    Refusal.NOT_ITS_SHAPE: 400,
    Refusal.NOT_VERIFIED: 403,
    Refusal.ALREADY_SENT: 403,
    Refusal.BODY_DIFFERS: 403,
    Refusal.MALFORMED: 400,
    Refusal.TOO_LARGE: 413,
    Refusal.TIMEOUT: 408,
    Refusal.INCOMPLETE: None,  # nobody is left to answer
    Refusal.CONNECTION_LIMIT: 503,
    Refusal.UPSTREAM_FAILED: 502,
}

_REASONS: Final = {
    400: "Bad Request",
    403: "Forbidden",
    408: "Request Timeout",
    413: "Content Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


class MalformedRequest(ValueError):
    """A request head the front does not read any further."""


@dataclass(frozen=True)
class RequestHead:
    """A role's request line and headers, strictly parsed (header names in lower case)."""

    method: str
    target: str
    headers: Mapping[str, str]

    @property
    def form(self) -> Form:
        if self.method == "CONNECT":
            return "tunnel"
        if self.target.startswith("/"):
            return "origin"
        return "asterisk" if self.target == "*" else "absolute"

    def body_length(self) -> int:
        """The declared body length; a body of unknown length (chunked) is refused."""
        if "transfer-encoding" in self.headers:
            raise MalformedRequest("a body of unknown length (Transfer-Encoding)")
        declared = self.headers.get("content-length", "0")
        if not _LENGTH.fullmatch(declared):
            raise MalformedRequest("a Content-Length that is not a plain number")
        return int(declared)


def parse_head(raw: bytes) -> RequestHead:
    """The request line and headers of ``raw``, which ends at the blank line; anything that
    is not visible ASCII in the form HTTP/1.1 gives it is malformed."""
    if len(raw) > MAX_HEAD_BYTES or not raw.endswith(b"\r\n\r\n"):
        raise MalformedRequest("a request head over its bound, or not ended by a blank line")
    try:
        text = raw[:-4].decode("ascii")
    except UnicodeDecodeError:
        raise MalformedRequest("bytes outside ASCII in the request head") from None
    request_line, *lines = text.split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3:
        raise MalformedRequest("a request line that is not METHOD TARGET VERSION")
    method, target, version = parts
    if not _METHOD.fullmatch(method) or not _TARGET.fullmatch(target):
        raise MalformedRequest("a method or target with characters HTTP does not allow")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise MalformedRequest("a protocol version other than HTTP/1.1 or HTTP/1.0")
    if len(lines) > MAX_HEADERS:
        raise MalformedRequest(f"more than {MAX_HEADERS} headers")
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        value = value.strip(" \t")
        if not colon or not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
            raise MalformedRequest("a header line that is not NAME: VALUE in visible ASCII")
        if name.lower() in headers:
            raise MalformedRequest("a header given twice")
        headers[name.lower()] = value
    return RequestHead(method, target, headers)


@dataclass(frozen=True)
class FrontPolicy:
    """What one role's front lets through to nono: its route prefix, its listed pairs, and
    which of them are once-only writes."""

    prefix: str  # "supplier": the route its base URL names, http://127.0.0.1:<port>/supplier
    pairs: frozenset[tuple[str, str]]  # (method, upstream path), exactly as listed
    once: frozenset[tuple[str, str]]  # the pairs that pass once, with a verified body
    inject_header: str  # the header that carries the role's placeholder
    max_connections: int

    def upstream_path(self, target: str) -> str | None:
        """The path after the route prefix, if ``target`` names one plainly; else None."""
        if not target.startswith(f"/{self.prefix}/"):
            return None
        path = target[len(self.prefix) + 1 :]
        return path if _PLAIN_PATH.fullmatch(path) and "/." not in path else None

    def carries_body(self, head: RequestHead) -> bool:
        """Whether ``head`` is a once-only write: the one shape that carries a body."""
        return (head.method, self.upstream_path(head.target) or "") in self.once


def head_refusal(policy: FrontPolicy, head: RequestHead) -> Refusal | None:
    """Why the front answers ``head`` itself, or None when it passes to the body check."""
    form = head.form
    if form == "tunnel":
        return Refusal.TUNNEL
    if form == "absolute":
        return Refusal.ABSOLUTE_FORM
    if form == "asterisk":
        return Refusal.ASTERISK_FORM
    path = policy.upstream_path(head.target)
    if path is None or (head.method, path) not in policy.pairs:
        return Refusal.NOT_LISTED
    return None


def shape_refusal(policy: FrontPolicy, head: RequestHead) -> Refusal | None:
    """Why a listed pair's request is refused for its shape, or None: only a once-only write
    carries a body, so any other request with a Content-Length other than 0, a
    Transfer-Encoding or a Content-Type is refused, however small (a GET's body would reach the
    supplier with the real key)."""
    if policy.carries_body(head):
        return None
    declared = head.headers.get("content-length", "0")
    if declared != "0" or any(name in head.headers for name in _BODY_HEADERS):
        return Refusal.NOT_ITS_SHAPE
    return None


def request_id(head: RequestHead | None, run_id: str) -> str | None:
    """The request id a role gave, if it is one of this run's (``<run id>-<who>-<n>``)."""
    if head is None:
        return None
    given = head.headers.get(REQUEST_ID_HEADER, "")
    pattern = rf"{re.escape(run_id)}-[a-z]{{1,16}}-[0-9]{{1,9}}"
    return given if re.fullmatch(pattern, given) else None


def upstream_request(
    policy: FrontPolicy,
    head: RequestHead,
    body: bytes,
    *,
    request_id: str,
    host: str,
) -> bytes:
    """The request the front sends nono for an accepted ``head``: the same method and target,
    and headers of the front's own making: the host, the request id, the role's placeholder
    (nono checks it and swaps in the key) and, for a once-only write alone, its body's length
    and the front's own content type. The request id is always one of this run's, so the
    supplier's log can be matched with the run's record. A body on any other request is an
    error here too, whatever the caller checked."""
    carries = policy.carries_body(head)
    if body and not carries:
        raise ValueError(f"a {head.method} that carries no body was given {len(body)} bytes")
    lines = [
        f"{head.method} {head.target} HTTP/1.1",
        f"Host: {host}",
        f"X-Analyst-Request-ID: {request_id}",
    ]
    placeholder = head.headers.get(policy.inject_header.lower())
    if placeholder is not None:
        lines.append(f"{policy.inject_header}: {placeholder}")
    if carries:
        lines += [f"Content-Type: {WRITE_CONTENT_TYPE}", f"Content-Length: {len(body)}"]
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


def refusal_response(refusal: Refusal) -> bytes:
    """The front's own answer: the status, and the reason in a word, for a person reading it."""
    status = STATUS[refusal]
    assert status is not None
    body = f"refused by the role's proxy: {refusal.value}\n".encode("ascii")
    return (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
        "Content-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii") + body


def response_status(head: bytes) -> int | None:
    """The status of an HTTP/1.x response head; None when it is not one."""
    match = re.match(rb"HTTP/1\.[01] ([1-5][0-9][0-9])[ \r]", head)
    return int(match.group(1)) if match else None


def response_body_length(head: bytes) -> int | None:
    """The Content-Length of a response head; None when it gives none."""
    match = re.search(rb"\r\ncontent-length:[ \t]*([0-9]{1,9})[ \t]*\r\n", head.lower())
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class FrontRecord:
    """One connection a role opened to its front, and what became of it."""

    seq: int
    form: Form | None  # None: no whole request head arrived
    method: str | None
    target: str | None  # what the role named, cut to MAX_RECORDED_TARGET characters
    request_id: str | None  # only a request id of this run
    refusal: Refusal | None  # None: passed to nono
    status: int | None  # what the role was answered
    nono: tuple[Mapping[str, Any], ...]  # nono's own audit of a request passed to it

    @property
    def passed(self) -> bool:
        return self.refusal is None

    def as_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "form": self.form,
            "method": self.method,
            "target": self.target,
            "request_id": self.request_id,
            "refusal": None if self.refusal is None else self.refusal.value,
            "status": self.status,
            "nono": [dict(event) for event in self.nono],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FrontRecord:
        refusal = data["refusal"]
        return cls(
            seq=int(data["seq"]),
            form=data["form"],
            method=data["method"],
            target=data["target"],
            request_id=data["request_id"],
            refusal=None if refusal is None else Refusal(refusal),
            status=data["status"],
            nono=tuple(data["nono"]),
        )


def recorded_target(head: RequestHead | None) -> str | None:
    return None if head is None else head.target[:MAX_RECORDED_TARGET]
