"""What a person reads on the terminal besides the check lines: the guest readings in words, the
closing summary of a run (the recommended supplier, a count per section, where the report is),
and the demo's last lines."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.controller.guest import GuestReadings
from app.core.checklog import CheckRecord


@dataclass(frozen=True)
class SectionCount:
    section: str
    passed: int
    skipped: int
    failed: int


def section_counts(records: Sequence[CheckRecord]) -> list[SectionCount]:
    """Each section in the order it began, with its outcomes counted."""
    counts: dict[str, list[int]] = {}
    for record in records:
        row = counts.setdefault(record.section, [0, 0, 0])
        row[("PASS", "SKIP", "FAIL").index(record.outcome)] += 1
    return [SectionCount(name, *row) for name, row in counts.items()]


def count_table(counts: Sequence[SectionCount]) -> list[str]:
    width = max([len("section"), *(len(c.section) for c in counts)])
    lines = [f"  {'section':<{width}}  passed  skipped  failed"]
    for c in counts:
        lines.append(f"  {c.section:<{width}}  {c.passed:>6}  {c.skipped:>7}  {c.failed:>6}")
    return lines


def _uptime(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def guest_in_words(guest: GuestReadings) -> str:
    """The four readings as a sentence, and what they say about hardware isolation."""
    devices = " ".join(guest.block_devices) or "none"
    product = guest.product_name or "none"
    if "enclave" in product.lower():
        meaning = "an enclave's name, as a hardware-isolated sandbox's guest reports"
    else:
        meaning = "no enclave named, so nothing here shows a hardware-isolated sandbox"
    return (
        f"guest: kernel {guest.kernel}, up {_uptime(guest.uptime_seconds)}, block devices "
        f"{devices}; product name {product}: {meaning}"
    )


@dataclass(frozen=True)
class Closing:
    """What the end of a complete run says."""

    run_id: str
    passed: int
    skipped: Sequence[str]  # the skipped checks' ids, in the order they were made
    recommended: str  # "Northstar Office Systems (northstar)"
    counts: list[SectionCount]
    model: str
    out_dir: Path
    report_uri: str
    signed_by: str = ""  # the key id of the attestation's signature
    made_key: Path | None = None  # this installation's key, when this run made it

    @property
    def report_page(self) -> Path:
        return self.out_dir / "report.html"

    def lines(self) -> list[str]:
        lines = [f"ANALYST_COMPLETE={self.run_id}", f"{self.passed} checks passed"]
        if self.skipped:
            count = len(self.skipped)
            lines.append(f"  {count} skipped, never counted as passed (each line above says why):")
            lines += textwrap.wrap(
                ", ".join(self.skipped), 96, initial_indent="    ", subsequent_indent="    "
            )
        lines += [
            f"  recommended supplier: {self.recommended}",
            *count_table(self.counts),
            f"  model: {self.model}",
            f"  report:         {self.report_page}",
            f"  recommendation: {self.out_dir / 'recommendation.md'}",
            f"  evidence:       {self.out_dir / 'evidence.json'}",
            f"  store report:   {self.report_uri}",
        ]
        if self.signed_by:
            lines += [
                f"  attestation:    {self.out_dir / 'attestation.intoto.jsonl'}, signed by key "
                f"{self.signed_by[:16]}",
                f"  public key:     {self.out_dir / 'attestation.pub'}",
                f"  verify with:    python -m app.controller verify {self.out_dir}",
            ]
        if self.made_key is not None:
            lines.append(
                f"  (first use: this installation's signing key was made, {self.made_key}, mode "
                "0600; its public key is the attestation.pub above)"
            )
        return lines


def demo_ending(reports: Sequence[tuple[str, Path]], comparison: Path) -> list[str]:
    """The demo's last lines: each layer's report page, then the page comparing them."""
    width = max(len(layer) for layer, _ in reports)
    lines = ["==> open these in a browser (each is one self-contained file)"]
    lines += [f"  {layer + ':':<{width + 1}} {page}" for layer, page in reports]
    lines.append(f"  {'both:':<{width + 1}} {comparison}")
    return lines
