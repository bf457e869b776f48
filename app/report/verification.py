"""What `verify` decides about a stored run: its attestation signed by the expected key, every
subject's bytes the ones signed, no check failed, and the policy in force the committed one.

Every difference is named, one per line, and nothing here trusts the machine that made the run:
the files are hashed again, the key is the reviewer's, the committed policies are read from the
reviewer's own folder. The attestation is hostile input until its signature holds, and even then
only what the signer said, so it is read strictly and its values are bounded before they are
shown.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from securesystemslib.signer import Key

from app.core.escaping import escaped
from app.report.attestation import AttestationUnreadable, read_attestation, signed_by
from app.report.statement import ATTESTATION_NAME, SUBJECT_NAMES, sha256

_SHA256: Final = re.compile(r"^[0-9a-f]{64}$")
_LAYERS: Final = ("bubblewrap", "nono")


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    proven: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # the ids of the checks skipped

    @property
    def holds(self) -> bool:
        return not self.problems

    def line(self) -> str:
        """One line: what was proven and what was skipped, or that it does not hold."""
        if self.problems:
            return f"NOT VERIFIED: {len(self.problems)} differences"
        skipped = (
            f"; skipped {len(self.skipped)}: {', '.join(self.skipped)}" if self.skipped else ""
        )
        return "VERIFIED: " + "; ".join(self.proven) + skipped


def _shown(value: object, limit: int = 120) -> str:
    return escaped(str(value))[:limit]


def verify_run(files: Mapping[str, bytes], keys: Sequence[Key], policy_dir: Path) -> Verdict:
    """``files``: the run's files by name, as read from its folder or its store prefix (those
    absent are left out); ``keys``: the public keys any one of which must have signed it."""
    verdict = Verdict()
    data = files.get(ATTESTATION_NAME)
    if data is None:
        verdict.problems.append(f"{ATTESTATION_NAME}: absent, so nothing of the run is signed")
        return verdict
    try:
        attestation = read_attestation(data)
    except AttestationUnreadable as error:
        verdict.problems.append(f"{ATTESTATION_NAME}: {_shown(error, 300)}")
        return verdict
    signer = next((key for key in keys if signed_by(attestation, key)), None)
    if signer is None:
        named = ", ".join(_shown(k, 20) for k in attestation.keyids) or "none"
        wanted = ", ".join(key.keyid[:16] for key in keys)
        verdict.problems.append(
            f"signature: not made by the key given ({wanted}); the envelope names {named}"
        )
        return verdict
    verdict.proven.append(f"signed by key {signer.keyid[:16]}")
    predicate = attestation.predicate
    _subjects(attestation.statement["subject"], files, verdict)
    _checks(predicate, files, verdict)
    _policies(predicate, policy_dir, verdict)
    return verdict


def _subjects(listed: list[Any], files: Mapping[str, bytes], verdict: Verdict) -> None:
    before, named = len(verdict.problems), set[str]()
    for entry in listed:
        name = entry.get("name") if isinstance(entry, dict) else None
        digest = entry.get("digest", {}).get("sha256") if isinstance(entry, dict) else None
        if name not in SUBJECT_NAMES or not isinstance(digest, str) or not _SHA256.match(digest):
            verdict.problems.append(f"subject {_shown(entry)}: not a run file with a sha256")
            continue
        named.add(name)
        if name not in files:
            verdict.problems.append(f"{name}: signed, but absent here")
        elif sha256(files[name]) != digest:
            verdict.problems.append(
                f"{name}: sha256 {sha256(files[name])}, the signed statement says {digest}"
            )
    for name in SUBJECT_NAMES:
        if name in files and name not in named:
            verdict.problems.append(f"{name}: here, but not among the signed subjects")
    if "checks.json" not in named:
        verdict.problems.append("checks.json: not among the signed subjects")
    if len(verdict.problems) == before:
        verdict.proven.append(f"{len(named)} files match their signed sha256")


def _checks(predicate: Mapping[str, Any], files: Mapping[str, bytes], verdict: Verdict) -> None:
    checks = predicate.get("checks")
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        verdict.problems.append("predicate: no list of checks")
        return
    failed = [c for c in checks if c.get("outcome") == "FAIL"]
    for check in failed:
        verdict.problems.append(
            f"check {_shown(check.get('id'))} FAILED: {_shown(check.get('claim'), 200)}"
        )
    stopped = predicate.get("stopped_at")
    if stopped is not None or predicate.get("outcome") != "PASS":
        verdict.problems.append(f"the run did not complete: it stopped at {_shown(stopped)}")
    _as_listed(checks, files.get("checks.json"), verdict)
    passed = sum(1 for c in checks if c.get("outcome") == "PASS")
    verdict.skipped = [_shown(c.get("id")) for c in checks if c.get("outcome") == "SKIP"]
    if not failed:
        verdict.proven.append(f"{passed} checks passed, none failed")


def _as_listed(checks: list[dict[str, Any]], listed: bytes | None, verdict: Verdict) -> None:
    """checks.json (a subject: its bytes are the signed ones) and the predicate's checks agree:
    every check of the file has the outcome the predicate gives it."""
    try:
        records = json.loads(listed or b"{}").get("checks", [])
    except (ValueError, AttributeError):
        verdict.problems.append("checks.json: not a JSON object")
        return
    signed = {str(c.get("id")): c.get("outcome") for c in checks}
    for record in records if isinstance(records, list) else ():
        if not isinstance(record, dict) or signed.get(str(record.get("id"))) != record.get(
            "outcome"
        ):
            shown = record.get("id") if isinstance(record, dict) else record
            verdict.problems.append(
                f"checks.json: check {_shown(shown)} is not in the predicate with its outcome"
            )


def _policies(predicate: Mapping[str, Any], policy_dir: Path, verdict: Verdict) -> None:
    digests = predicate.get("policy_digests")
    layer = (
        predicate.get("run", {}).get("layer") if isinstance(predicate.get("run"), dict) else None
    )
    if not isinstance(digests, dict) or layer not in _LAYERS:
        verdict.problems.append("predicate: no policy digests (the run stopped before them)")
        return
    folder = policy_dir / str(layer)
    committed = digests.get("committed_files")
    if not isinstance(committed, dict):
        verdict.problems.append("predicate: no committed policy files")
        return
    if not folder.is_dir():
        verdict.problems.append(f"{folder}: not a folder of committed policies")
        return
    here = {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file()
    }
    before = len(verdict.problems)
    for name in sorted(set(committed) | set(here)):
        if name not in here:
            verdict.problems.append(f"policy {layer}/{_shown(name)}: in force, absent in {folder}")
        elif name not in committed:
            verdict.problems.append(f"policy {layer}/{name}: in {folder}, not in force in the run")
        elif committed[name] != here[name]:
            verdict.problems.append(
                f"policy {layer}/{name}: the run's was sha256 {_shown(committed[name])}, "
                f"{folder / name} is {here[name]}"
            )
    roles = digests.get("roles")
    for role, entry in roles.items() if isinstance(roles, dict) else ():
        if not isinstance(entry, dict) or entry.get("same") is not True:
            verdict.problems.append(
                f"policy of the {_shown(role)}: the one in force differs from the committed one"
            )
    if len(verdict.problems) == before:
        verdict.proven.append(
            f"the policy in force is the committed one ({len(here)} files of {folder})"
        )
