"""What a CI job reads of a run: JUnit XML (one testcase per check id, a SKIP as skipped with its
reason, a FAIL as a failure with its claim and what was observed) and a JSON summary.

Every text comes from the run's check records, whose details quote what tools and services
answered: ElementTree escapes it for XML, and characters XML 1.0 cannot hold are replaced, so a
hostile detail can neither break the document nor hide in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from xml.etree import ElementTree

# Characters XML 1.0 does not allow, whatever their escaping.
_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


@dataclass(frozen=True)
class RunSummary:
    """One layer's run as CI sees it: complete, or stopped at a failed check."""

    layer: str
    run_id: str
    checks: Sequence[Mapping[str, Any]]  # the check records, in order
    stopped_at: str | None = None
    out_dir: Path | None = None
    signed_by: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def count(self, outcome: str) -> int:
        return sum(1 for check in self.checks if check.get("outcome") == outcome)

    def as_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "run_id": self.run_id,
            "outcome": "FAIL" if self.stopped_at or self.count("FAIL") else "PASS",
            "stopped_at": self.stopped_at,
            "passed": self.count("PASS"),
            "skipped": [str(c["id"]) for c in self.checks if c.get("outcome") == "SKIP"],
            "failed": [str(c["id"]) for c in self.checks if c.get("outcome") == "FAIL"],
            "out_dir": str(self.out_dir) if self.out_dir else None,
            "attestation": str(self.out_dir / "attestation.intoto.jsonl") if self.out_dir else None,
            "signed_by": self.signed_by or None,
            **self.extra,
        }


def junit_xml(runs: Sequence[RunSummary]) -> bytes:
    suites = ElementTree.Element("testsuites", name="procurement-analyst")
    for run in runs:
        suite = ElementTree.SubElement(
            suites,
            "testsuite",
            name=run.layer,
            tests=str(len(run.checks)),
            failures=str(run.count("FAIL")),
            skipped=str(run.count("SKIP")),
            errors="0",
        )
        ElementTree.SubElement(
            ElementTree.SubElement(suite, "properties"),
            "property",
            name="run_id",
            value=_text(run.run_id),
        )
        for check in run.checks:
            case = ElementTree.SubElement(
                suite,
                "testcase",
                classname=f"{run.layer}.{_text(check.get('section', ''))}",
                name=_text(check["id"]),
            )
            outcome, claim, detail = (
                check.get("outcome"),
                check.get("claim", ""),
                check.get("detail", ""),
            )
            if outcome == "SKIP":
                ElementTree.SubElement(case, "skipped", message=_text(detail))
            elif outcome == "FAIL":
                failure = ElementTree.SubElement(case, "failure", message=_text(claim))
                failure.text = _text(f"claim: {claim}\nobserved: {detail}")
            else:
                ElementTree.SubElement(case, "system-out").text = _text(detail)
    written: bytes = ElementTree.tostring(suites, encoding="utf-8", xml_declaration=True)
    return written + b"\n"


def summary_json(runs: Sequence[RunSummary]) -> str:
    return json.dumps({"runs": [run.as_json() for run in runs]}, indent=2, ensure_ascii=True)
