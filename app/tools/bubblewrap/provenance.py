"""Which bwrap this run uses, against the pin the image is built from.

In the cluster the analyst image's bwrap must report the pinned version, and the image's build
record must name the pinned tag and commit; a difference is a FAIL naming both values. A local
run uses whatever bwrap the machine has (Debian's, say), which has no build record: those lines
SKIP with that reason. A build record that is present is checked wherever the run is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.core.pins import BUBBLEWRAP, BUBBLEWRAP_BUILD_RECORD, SourcePin
from app.core.run import Run
from app.tools.bubblewrap.preflight import BwrapReadings
from app.tools.catalogue import bubblewrap as c

MAX_RECORD_BYTES = 4096


@dataclass(frozen=True)
class BuildRecord:
    version: str
    tag: str
    commit: str
    source: str


def read_build_record(path: Path) -> BuildRecord | str:
    """The image's record of its bwrap build, or why there is none to read."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return f"no build record at {path}"
    except OSError as error:
        return f"{path} cannot be read ({error.strerror})"
    if len(raw) > MAX_RECORD_BYTES:
        return f"{path} is larger than a build record ({MAX_RECORD_BYTES} bytes at most)"
    try:
        document = json.loads(raw)
        return BuildRecord(
            version=str(document["version"]),
            tag=str(document["tag"]),
            commit=str(document["source_commit"]),
            source=str(document["source"]),
        )
    except (ValueError, TypeError, KeyError) as error:
        return f"{path} is not a build record ({type(error).__name__}: {error})"


def check_provenance(
    run: Run,
    readings: BwrapReadings,
    *,
    pin: SourcePin = BUBBLEWRAP,
    record_path: Path = BUBBLEWRAP_BUILD_RECORD,
) -> None:
    checks = run.checks
    record = read_build_record(record_path)
    version_claim = c.PINNED_VERSION(version=pin.reported_version)
    record_claim = c.BUILD_RECORD(tag=pin.tag, commit=pin.commit)
    if isinstance(record, str) and (not run.in_cluster or run.rehearsal):
        which = "a rehearsal" if run.rehearsal else "a local run"
        checks.skip(
            version_claim,
            f"{which} uses the bwrap it finds, here {readings.path}, which reports "
            f"{readings.version!r}: this machine's own build, not the analyst image's",
        )
        checks.skip(record_claim, f"{record}: only the analyst image has one")
        return
    checks.require(
        version_claim,
        readings.version == pin.reported_version,
        detail=f"{readings.path} reports {readings.version!r}, the pin is {pin.reported_version!r}",
    )
    if isinstance(record, str):
        checks.fail(record_claim, record)
        return
    differs = [
        f"{name} {found!r}, the pin is {pinned!r}"
        for name, found, pinned in (
            ("version", record.version, pin.version),
            ("tag", record.tag, pin.tag),
            ("commit", record.commit, pin.commit),
            ("source", record.source, pin.repository),
        )
        if found != pinned
    ]
    checks.require(
        record_claim,
        not differs,
        detail=f"{record_path}: " + ("; ".join(differs) or f"{record.tag}, {record.commit}"),
    )
