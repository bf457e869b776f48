"""The demo's page comparing the two layers' runs of one case, side by side.

Checks are matched across the layers by their stable id, never by wording: a check both layers
make (``files.reader.no-new-file``, ``attacks.files``) shows each layer's outcome and what each
observed, so the same refusal reached by different means reads as different errnos (EROFS
under bubblewrap, EACCES under nono); an id only one layer's run holds is what only that layer
proves. Every attack's probe is set beside the unconfined control's answer. The page is
rendered from the two runs' own evidence.json and checks.json, escaped like report.html.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.roles import ROLES
from app.report.page import CONTROL, Cell, CheckView, attacks, check_views, matrix_cell, render

PAGE_NAME = "comparison-{first}-{second}.html"


@dataclass(frozen=True)
class LayerRun:
    layer: str
    out_dir: Path
    evidence: Mapping[str, Any]
    checks: list[CheckView]

    def count(self, status: str) -> int:
        return sum(1 for check in self.checks if check.status == status)


def load(out_dir: Path) -> LayerRun:
    evidence = json.loads((out_dir / "evidence.json").read_text(encoding="utf-8"))
    checks = json.loads((out_dir / "checks.json").read_text(encoding="utf-8"))
    top = str(evidence.get("endpoints", {}).get("run_tree", ""))
    return LayerRun(str(evidence["layer"]), out_dir, evidence, check_views(checks, top))


@dataclass(frozen=True)
class CheckRow:
    """One check id and each layer's record of it (None where that layer's run has none)."""

    id: str
    outcomes: list[CheckView | None]

    @property
    def made(self) -> list[CheckView]:
        return [outcome for outcome in self.outcomes if outcome is not None]

    @property
    def only(self) -> int | None:
        """The one layer whose run made this check, if only one did."""
        present = [i for i, outcome in enumerate(self.outcomes) if outcome is not None]
        return present[0] if len(present) == 1 else None

    @property
    def sections(self) -> list[str]:
        return list(dict.fromkeys(check.section for check in self.made))

    @property
    def claim(self) -> str | None:
        """The claim when every layer words it alike; None when each says how it holds."""
        claims = {check.claim for check in self.made}
        return claims.pop() if len(claims) == 1 else None


def check_rows(runs: Sequence[LayerRun]) -> list[CheckRow]:
    """Every id any run made, in the order the first run made it (then the next run's own)."""
    rows: dict[str, CheckRow] = {}
    for index, run in enumerate(runs):
        for check in run.checks:
            row = rows.setdefault(check.id, CheckRow(check.id, [None] * len(runs)))
            row.outcomes[index] = check
    return list(rows.values())


@dataclass(frozen=True)
class LayerAnswer:
    """What the roles got under one layer: one cell where all three agree, else one each."""

    cells: list[tuple[str, Cell]]  # (the role, or "" for all three; its cell)


@dataclass(frozen=True)
class AttackRow:
    attack: str
    probe: str
    control: Cell
    answers: list[LayerAnswer]  # per layer


def _roles_answer(evidence: Mapping[str, Any], probe: str, control: str | None) -> LayerAnswer:
    roles = evidence.get("attack_answers", {}).get("roles", {})
    seen = {role: roles.get(role, {}).get(probe) for role in ROLES}
    if len(set(seen.values())) == 1:
        return LayerAnswer([("", matrix_cell(ROLES[0], seen[ROLES[0]], control))])
    return LayerAnswer(
        [(role, matrix_cell(role, answer, control)) for role, answer in seen.items()]
    )


def attack_rows(runs: Sequence[LayerRun]) -> list[AttackRow]:
    control = runs[0].evidence.get("attack_answers", {}).get("control", {})
    return [
        AttackRow(
            attack.key,
            probe,
            matrix_cell(CONTROL, control.get(probe), control.get(probe)),
            [_roles_answer(run.evidence, probe, control.get(probe)) for run in runs],
        )
        for attack in attacks(runs[0].evidence)
        for probe in attack.probes
    ]


def render_comparison(runs: Sequence[LayerRun], page_dir: Path) -> bytes:
    rows = check_rows(runs)
    return render(
        "comparison.html.j2",
        runs=runs,
        links=[os.path.relpath(run.out_dir / "report.html", page_dir) for run in runs],
        shared=[row for row in rows if row.only is None],
        only=[[row for row in rows if row.only == i] for i in range(len(runs))],
        attacks=attack_rows(runs),
    )


def write_layer_comparison(out_dirs: Sequence[Path]) -> Path:
    """Writes the page beside the runs' folders (runs/); returns its path."""
    runs = [load(path) for path in out_dirs]
    parent = Path(*_common(out_dirs))
    page = parent / PAGE_NAME.format(
        first=runs[0].evidence["run_id"][:8], second=runs[1].evidence["run_id"][:8]
    )
    page.write_bytes(render_comparison(runs, parent))
    return page


def _common(paths: Sequence[Path]) -> tuple[str, ...]:
    parts = [path.resolve().parts for path in paths]
    common: list[str] = []
    for step in zip(*parts, strict=False):
        if len(set(step)) != 1:
            break
        common.append(step[0])
    return tuple(common)
