"""The five operations of the synthetic supplier API, each answered as a status and a JSON
payload, once the request is framed and its key checked."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any, Protocol

from app.supplier_api.catalog import SeededCase
from app.supplier_api.draft_store import DraftStore
from app.supplier_api.log import RequestLog
from app.supplier_api.routes import match

Answer = tuple[int, dict[str, Any]]


class Backing(Protocol):
    """What the operations read and write: the seeded cases, the drafts and the request log."""

    @property
    def catalog(self) -> Mapping[str, SeededCase]: ...

    @property
    def drafts(self) -> DraftStore: ...

    @property
    def log(self) -> RequestLog: ...


def phrase(status: int) -> str:
    return HTTPStatus(status).phrase.lower()


def operate(backing: Backing, method: str, path: str, content_type: str, body: bytes) -> Answer:
    """The answer to an authenticated request: its route's operation, or the route's refusal."""
    found = match(method, path)
    if found.operation is None:
        return found.status, {"error": phrase(found.status)}
    operations: dict[str, Callable[[Backing, str, str, bytes], Answer]] = {
        "availability": _availability,
        "submit_draft": _submit_draft,
        "update_supplier": _update_supplier,
        "purchase_order": _purchase_order,
        "read_log": _read_log,
    }
    return operations[found.operation](backing, found.argument or "", content_type, body)


def _availability(backing: Backing, case_id: str, _content_type: str, _body: bytes) -> Answer:
    case = backing.catalog.get(case_id)
    if case is None:
        return HTTPStatus.NOT_FOUND, {"error": f"no case {case_id} is seeded"}
    return HTTPStatus.OK, {"case_id": case.case_id, "availability": dict(case.availability)}


def _submit_draft(backing: Backing, case_id: str, content_type: str, body: bytes) -> Answer:
    if backing.catalog.get(case_id) is None:
        return HTTPStatus.NOT_FOUND, {"error": f"no case {case_id} is seeded"}
    if not body:
        return HTTPStatus.BAD_REQUEST, {"error": "the draft is empty"}
    if content_type.startswith("application/json"):
        try:
            json.loads(body)
        except (ValueError, RecursionError):  # nested too deep to parse is not valid either
            return HTTPStatus.BAD_REQUEST, {"error": "the draft is not valid JSON"}
    draft = backing.drafts.add(case_id, content_type, body)
    return HTTPStatus.CREATED, {"recommendation_id": draft.recommendation_id}


def _update_supplier(
    _backing: Backing, supplier_id: str, _content_type: str, _body: bytes
) -> Answer:
    # Synthetic: accepted and applied to nothing. It exists so a refusal elsewhere is
    # shown to be the caller's boundary and not this server's.
    return HTTPStatus.OK, {"supplier_id": supplier_id, "updated": True}


def _purchase_order(_backing: Backing, _arg: str, _content_type: str, _body: bytes) -> Answer:
    return HTTPStatus.CREATED, {"purchase_order_id": f"po-{secrets.token_hex(8)}"}


def _read_log(backing: Backing, _arg: str, _content_type: str, _body: bytes) -> Answer:
    return HTTPStatus.OK, {"entries": backing.log.entries()}
