"""Two real runs of one case for the report page tests, one per layer: the case's winning
supplier has a hostile name, and the nono run is made with every claim of the catalogue
reworded, so that nothing either page shows or pairs may depend on a claim's wording."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.controller.run import RunOutcome, run_case
from app.controller.run_plan import RunOptions
from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer
from tests.support.reworded import reworded_claims

HOSTILE_NAME = (
    "<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">"
    'Northstar & "Sons" </td></table>'
)
# The layer whose run is made with every claim reworded.
REWORDED_LAYER = Layer.NONO


@dataclass(frozen=True)
class Runs:
    base: Path
    outcomes: dict[Layer, RunOutcome]

    def out(self, layer: Layer) -> Path:
        return self.outcomes[layer].out_dir

    def document(self, layer: Layer, name: str) -> Any:
        return json.loads((self.out(layer) / name).read_text(encoding="utf-8"))


def _hostile_case(base: Path) -> Path:
    case = base / "case"
    shutil.copytree(SAMPLE_CASE, case)
    proposal = case / "proposals" / "northstar.json"
    doc = json.loads(proposal.read_text())
    doc["name"] = HOSTILE_NAME
    data = json.dumps(doc).encode()
    proposal.write_bytes(data)
    case_doc = json.loads((case / "case.json").read_text())
    for entry in case_doc["suppliers"]:
        if entry["id"] == "northstar":
            entry["name"] = HOSTILE_NAME
            entry["sha256"] = hashlib.sha256(data).hexdigest()
    (case / "case.json").write_text(json.dumps(case_doc))
    return case


@contextmanager
def report_runs() -> Iterator[Runs]:
    """Both runs, each report folder under runs/<layer>/out as the demo lays them out."""
    base = Path(tempfile.mkdtemp(prefix="analyst-report-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        case = _hostile_case(base)
        outcomes = {}
        for layer in Layer:
            options = RunOptions(
                layer=layer,
                case_dir=case,
                out_dir=base / "runs" / layer.value / "out",
                work_base=base / "work",
                workdir_layers=tuple(Layer),
            )
            (base / "runs" / layer.value).mkdir(parents=True)
            with reworded_claims() if layer is REWORDED_LAYER else nullcontext():
                outcomes[layer] = run_case(options, stream=io.StringIO())
        yield Runs(base, outcomes)
    finally:
        shutil.rmtree(base, ignore_errors=True)
