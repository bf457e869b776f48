"""report.html: one self-contained page per run, for a reviewer who has never seen the project.

It is rendered from the run's own documents (evidence.json, checks.json and comparison.json)
and the layer's committed element accounting, with Jinja2's autoescaping on: every
text that came from a tool, a case, the model or the supplier reaches the page escaped. The page
loads nothing (inline CSS and SVG, no script, a Content-Security-Policy that allows none).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from app.controller.boundary_picture import Picture, picture
from app.core.escaping import escaped_lines
from app.core.repo import POLICIES_DIR
from app.core.roles import ROLES
from app.tools.attacks import ATTACKS, OK

TEMPLATES: Final = Path(__file__).parent / "templates"
# What a SKIP line appends to its claim before its reason (CheckLog.skip).
SKIP_SEPARATOR: Final = " \u2014 "
CONTROL: Final = "control"


@dataclass(frozen=True)
class ReportInputs:
    evidence: Mapping[str, Any]
    checks: Mapping[str, Any]  # checks.json
    comparison: Mapping[str, Any]


@cache
def environment() -> Any:
    # Imported here: only the last phase of a run needs Jinja2.
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        # Every value a template prints, before it is HTML-escaped: bidirectional controls and
        # invisible characters would reorder or hide what the page says.
        finalize=_escaped_value,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _escaped_value(value: Any) -> Any:
    return escaped_lines(value) if isinstance(value, str) else value


def render(template: str, **values: Any) -> bytes:
    text: str = environment().get_template(template).render(**values)
    return text.encode("utf-8")


# --- checks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckView:
    index: int
    id: str
    section: str
    status: str
    claim: str
    reason: str
    detail: str


def check_views(checks: Mapping[str, Any]) -> list[CheckView]:
    views = []
    for index, record in enumerate(checks["checks"], start=1):
        claim, reason = str(record["claim"]), ""
        detail = str(record.get("detail", ""))
        status = str(record.get("outcome", record.get("status", "")))
        if status == "SKIP" and SKIP_SEPARATOR in claim:
            claim, _, reason = claim.rpartition(SKIP_SEPARATOR)
        elif status == "SKIP":
            # A SKIP's detail is why it cannot be made here.
            reason, detail = detail, ""
        views.append(
            CheckView(
                index=index,
                id=str(record.get("id") or f"#{index}"),
                section=str(record["section"]),
                status=status,
                claim=claim,
                reason=reason,
                detail=detail,
            )
        )
    return views


@dataclass(frozen=True)
class Section:
    name: str
    checks: list[CheckView]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)


def sections(views: Sequence[CheckView]) -> list[Section]:
    by_name: dict[str, list[CheckView]] = {}
    for view in views:
        by_name.setdefault(view.section, []).append(view)
    return [Section(name, checks) for name, checks in by_name.items()]


# --- the attack matrix ----------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    column: str
    answer: str
    kind: str  # "succeeds", "refused", "as-unconfined", "kernel", "not-tried"
    glyph: str
    words: str


@dataclass(frozen=True)
class MatrixRow:
    attack: str
    claim: str
    probe: str
    cells: list[Cell]


def _cell(column: str, answer: str | None, control: str | None) -> Cell:
    if answer is None:
        return Cell(column, "", "not-tried", "\u2013", "not tried here")
    if answer == OK:
        return Cell(column, answer, "succeeds", "\u2713", "succeeds")
    if column == CONTROL:
        return Cell(column, answer, "kernel", "\u2192", "the kernel's own answer")
    if answer == control:
        return Cell(column, answer, "as-unconfined", "=", "the same as unconfined")
    return Cell(column, answer, "refused", "\u2717", "refused")


def attack_matrix(evidence: Mapping[str, Any]) -> list[MatrixRow]:
    answers = evidence.get("attack_answers", {})
    control, roles = answers.get("control", {}), answers.get("roles", {})
    rows = []
    for attack in ATTACKS:
        for probe in attack.probes:
            seen = control.get(probe)
            cells = [_cell(CONTROL, seen, seen)]
            cells += [_cell(role, roles.get(role, {}).get(probe), seen) for role in ROLES]
            rows.append(MatrixRow(attack.key, attack.claim, probe, cells))
    return rows


# --- policy elements and the checks that watch them ------------------------------------------


@dataclass(frozen=True)
class ElementView:
    element: str
    tokens: str
    watcher: CheckView | None
    watched_by: str  # the accounting's name for its check
    because: str
    redundant: str


def _watcher(name: str, views: Sequence[CheckView]) -> CheckView | None:
    """The check an element's accounting names: by id, or by the opening of its claim."""
    for view in views:
        if view.id == name:
            return view
    for view in views:
        if view.claim.startswith(name):
            return view
    return None


def element_views(layer: str, views: Sequence[CheckView]) -> dict[str, list[ElementView]]:
    path = POLICIES_DIR / layer / "elements.json"
    accounting = json.loads(path.read_text(encoding="utf-8"))
    by_role: dict[str, list[ElementView]] = {}
    for role, elements in accounting["roles"].items():
        by_role[str(role)] = [
            ElementView(
                element=str(entry["element"]),
                tokens=str(entry.get("argv", "")),
                watcher=_watcher(str(entry.get("fails_without_it", "")), views)
                if "fails_without_it" in entry
                else None,
                watched_by=str(entry.get("fails_without_it", "")),
                because=str(entry.get("because", "")),
                redundant=str(entry.get("redundant", "")),
            )
            for entry in elements
        ]
    return by_role


# --- the page -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportView:
    evidence: Mapping[str, Any]
    comparison: Mapping[str, Any]
    checks: list[CheckView]
    sections: list[Section]
    matrix: list[MatrixRow]
    columns: list[str]
    elements: dict[str, list[ElementView]]
    picture: Picture
    supplier_names: dict[str, str]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)

    @property
    def skipped(self) -> list[CheckView]:
        return [check for check in self.checks if check.status == "SKIP"]


def report_view(inputs: ReportInputs) -> ReportView:
    evidence = inputs.evidence
    views = check_views(inputs.checks)
    suppliers = evidence.get("case", {}).get("suppliers", [])
    return ReportView(
        evidence=evidence,
        comparison=inputs.comparison,
        checks=views,
        sections=sections(views),
        matrix=attack_matrix(evidence),
        columns=[CONTROL, *ROLES],
        elements=element_views(str(evidence["layer"]), views),
        picture=picture(evidence),
        supplier_names={str(s["id"]): str(s["name"]) for s in suppliers},
    )


def render_report(inputs: ReportInputs) -> bytes:
    return render("report.html.j2", view=report_view(inputs))
