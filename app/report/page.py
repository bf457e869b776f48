"""report.html: one self-contained page per run, for a reviewer who has never seen the project.

It is rendered from the run's own documents alone (evidence.json, checks.json and
comparison.json) and the layer's committed element accounting, so it renders any stored run,
with Jinja2's autoescaping on: every text that came from a tool, a case, the model or the
supplier reaches the page escaped. The page loads nothing (inline CSS and SVG, no script, a
Content-Security-Policy that allows none).

Every check is shown and found by its stable id (app/core/catalogue.py), never by its wording
or its place in the list: the check list, the element table and the attack matrix name ids, so
a check the catalogue gains appears here with no change to this module. The attacks and the
checks that prove them are named by evidence.json, the checks still to come by checks.json.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

from app.core.escaping import escaped_lines
from app.core.repo import POLICIES_DIR
from app.core.roles import ROLES
from app.report.boundary_views import RUN_TREE, control_pairs
from app.report.picture import Picture, picture

TEMPLATES: Final = Path(__file__).parent / "templates"
TEMPLATE_BYTECODE: Final = TEMPLATES / "__pycache__"
CONTROL: Final = "control"
# How evidence.json writes a probe that succeeded (app/tools/attacks.py's OK).
OK: Final = "ok"


@dataclass(frozen=True)
class ReportInputs:
    evidence: Mapping[str, Any]
    checks: Mapping[str, Any]  # checks.json
    comparison: Mapping[str, Any]


@cache
def environment() -> Any:
    """The page's templates; their compiled form is kept beside them (template_bytecode.py),
    written when the interpreter writes its own bytecode."""
    # Imported here: only the report page needs Jinja2.
    import jinja2

    from app.report.template_bytecode import TemplateBytecode

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=TemplateBytecode(TEMPLATE_BYTECODE, write=not sys.dont_write_bytecode),
        autoescape=True,
        # Every value a template prints, before it is HTML-escaped: bidirectional controls and
        # invisible characters would reorder or hide what the page says.
        finalize=_escaped_value,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _escaped_value(value: Any) -> Any:
    # A macro's output (Markup, which has __html__) is markup the template wrote, whose own
    # values were finalized as it was built: escaping it again would show its tags as text.
    if hasattr(value, "__html__"):
        return value
    return escaped_lines(value) if isinstance(value, str) else value


def compile_templates() -> None:
    """Compiles (or loads the compiled form of) every template ahead of the first render
    (app/controller/report_templates.py starts it in a thread of the run's)."""
    templates = environment()
    for name in templates.list_templates(extensions=["j2"]):
        templates.get_template(name)


def render(template: str, **values: Any) -> bytes:
    text: str = environment().get_template(template).render(**values)
    return text.encode("utf-8")


def within_run_tree(text: str, top: str) -> str:
    """The text with the run's private tree written as ``<run tree>``: check details name
    paths under it, and the page says once where it was."""
    if not top:
        return text
    return re.sub(re.escape(top) + r"(?![\w.-])", RUN_TREE, text)


# --- checks ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckView:
    id: str
    section: str
    status: str
    claim: str
    # What was observed (PASS, FAIL); for a SKIP, why it cannot be made here.
    detail: str

    @property
    def anchor(self) -> str:
        return f"check-{self.id}"


def check_views(checks: Mapping[str, Any], top: str) -> list[CheckView]:
    """checks.json's records, in order; ``top``: the run tree, abbreviated in each detail."""
    return [
        CheckView(
            id=str(record["id"]),
            section=str(record["section"]),
            status=str(record["outcome"]),
            claim=str(record["claim"]),
            detail=within_run_tree(str(record["detail"]), top),
        )
        for record in checks["checks"]
    ]


@dataclass(frozen=True)
class LaterCheck:
    """A check the run makes after checks.json and this page are written (the read-back scan):
    named, since its line is in the run's output but cannot be in checks.json or here."""

    id: str
    section: str
    claim: str


def later_checks(checks: Mapping[str, Any]) -> list[LaterCheck]:
    return [
        LaterCheck(str(record["id"]), str(record["section"]), str(record["claim"]))
        for record in checks.get("after_written", [])
    ]


@dataclass(frozen=True)
class Section:
    name: str
    checks: list[CheckView]
    after_page: Sequence[LaterCheck]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)


def sections(views: Sequence[CheckView], later: Sequence[LaterCheck]) -> list[Section]:
    by_name: dict[str, list[CheckView]] = {}
    for view in views:
        by_name.setdefault(view.section, []).append(view)
    return [
        Section(name, checks, [check for check in later if check.section == name])
        for name, checks in by_name.items()
    ]


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
    # The checks that prove the row, by id: the attack's own and its unconfined control's.
    check: CheckView | None
    control: CheckView | None


def matrix_cell(column: str, answer: str | None, control: str | None) -> Cell:
    """One answer as the matrix shows it: a glyph and words as well as a colour, so a
    refusal and a success read apart in any rendering."""
    if answer is None:
        return Cell(column, "", "not-tried", "\u2013", "not tried here")
    if answer == OK:
        return Cell(column, answer, "succeeds", "\u2713", "succeeds")
    if column == CONTROL:
        return Cell(column, answer, "kernel", "\u2192", "the kernel's own answer")
    if answer == control:
        return Cell(column, answer, "as-unconfined", "=", "the same as unconfined")
    return Cell(column, answer, "refused", "\u2717", "refused")


@dataclass(frozen=True)
class Attack:
    """One path out as evidence.json names it: its probes, and the ids of the check that proves
    it and of its unconfined control."""

    key: str
    claim: str
    probes: tuple[str, ...]
    check: str
    control: str


def attacks(evidence: Mapping[str, Any]) -> list[Attack]:
    return [
        Attack(
            str(entry["key"]),
            str(entry["claim"]),
            tuple(str(probe) for probe in entry["probes"]),
            str(entry["check"]),
            str(entry["control"]),
        )
        for entry in evidence.get("attacks", [])
    ]


def attack_matrix(evidence: Mapping[str, Any], by_id: Mapping[str, CheckView]) -> list[MatrixRow]:
    answers = evidence.get("attack_answers", {})
    control, roles = answers.get("control", {}), answers.get("roles", {})
    rows = []
    for attack in attacks(evidence):
        check, made_control = by_id.get(attack.check), by_id.get(attack.control)
        for probe in attack.probes:
            seen = control.get(probe)
            cells = [matrix_cell(CONTROL, seen, seen)]
            cells += [matrix_cell(role, roles.get(role, {}).get(probe), seen) for role in ROLES]
            rows.append(MatrixRow(attack.key, attack.claim, probe, cells, check, made_control))
    return rows


# --- policy elements and the checks that watch them ------------------------------------------


@dataclass(frozen=True)
class ElementView:
    element: str
    tokens: str
    watched_by: str  # the id of the check that fails without it ("" when redundant)
    watcher: CheckView | None  # that check as this run made it; None when it did not
    because: str
    redundant: str


def element_views(layer: str, by_id: Mapping[str, CheckView]) -> dict[str, list[ElementView]]:
    path = POLICIES_DIR / layer / "elements.json"
    accounting = json.loads(path.read_text(encoding="utf-8"))
    by_role: dict[str, list[ElementView]] = {}
    for role, elements in accounting["roles"].items():
        by_role[str(role)] = [
            ElementView(
                element=str(entry["element"]),
                tokens=str(entry.get("argv", "")),
                watched_by=str(entry.get("fails_without_it", "")),
                watcher=by_id.get(str(entry.get("fails_without_it", ""))),
                because=str(entry.get("because", "")),
                redundant=str(entry.get("redundant", "")),
            )
            for entry in elements
        ]
    return by_role


# --- the comparison the model's choice was checked against ----------------------------------


@dataclass(frozen=True)
class SupplierView:
    id: str
    name: str
    eligible: bool
    misses: list[str]
    why: str  # comparison.json's own words: why it won or lost
    winner: bool


def supplier_views(comparison: Mapping[str, Any], names: Mapping[str, str]) -> list[SupplierView]:
    """comparison.json's suppliers in its order, each named as the case names it."""
    winner = str(comparison.get("winner", ""))
    return [
        SupplierView(
            id=str(entry["id"]),
            name=names.get(str(entry["id"]), str(entry["id"])),
            eligible=bool(entry.get("eligible")),
            misses=[str(miss) for miss in entry.get("misses", [])],
            why=str(entry.get("why", "")),
            winner=str(entry["id"]) == winner,
        )
        for entry in comparison.get("suppliers", [])
    ]


# --- the page -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportView:
    evidence: Mapping[str, Any]
    comparison_rule: str  # comparison.json's rule, in words
    checks: list[CheckView]
    sections: list[Section]
    matrix: list[MatrixRow]
    columns: list[str]
    elements: dict[str, list[ElementView]]
    picture: Picture
    suppliers: list[SupplierView]
    run_tree: str
    # The method/path pairs a role's proxy refused: the controller's own call of one is a control.
    controls: set[tuple[Any, Any]]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)

    @property
    def skipped(self) -> list[CheckView]:
        return [check for check in self.checks if check.status == "SKIP"]

    @property
    def after_page(self) -> list[LaterCheck]:
        return [check for section in self.sections for check in section.after_page]

    @property
    def winner(self) -> SupplierView | None:
        return next((supplier for supplier in self.suppliers if supplier.winner), None)


def report_view(inputs: ReportInputs) -> ReportView:
    evidence = inputs.evidence
    top = str(evidence.get("endpoints", {}).get("run_tree", ""))
    views = check_views(inputs.checks, top)
    by_id = {view.id: view for view in views}
    names = {str(s["id"]): str(s["name"]) for s in evidence.get("case", {}).get("suppliers", [])}
    return ReportView(
        evidence=evidence,
        comparison_rule=str(inputs.comparison.get("rule", "")),
        checks=views,
        sections=sections(views, later_checks(inputs.checks)),
        matrix=attack_matrix(evidence, by_id),
        columns=[CONTROL, *ROLES],
        elements=element_views(str(evidence["layer"]), by_id),
        picture=picture(evidence),
        suppliers=supplier_views(inputs.comparison, names),
        run_tree=top,
        controls=control_pairs(evidence.get("correlation", {}).get("calls", [])),
    )


def render_report(inputs: ReportInputs) -> bytes:
    return render("report.html.j2", view=report_view(inputs))
