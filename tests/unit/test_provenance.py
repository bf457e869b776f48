"""Which bwrap a run uses, against the one pin the image is built from."""

from __future__ import annotations

import io
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from app.core.catalogue import Section
from app.core.checklog import CheckFailed
from app.core.pins import BUBBLEWRAP, bubblewrap_build_args
from app.core.repo import REPO_ROOT
from app.core.roles import Layer
from app.core.run import Run
from app.tools.bubblewrap.preflight import BwrapReadings
from app.tools.bubblewrap.provenance import check_provenance
from app.tools.catalogue import bubblewrap as c
from tests.support.whole_runs import bare_run, bare_tree

DOCKERFILE = (REPO_ROOT / "Dockerfile.analyst").read_text(encoding="utf-8")


def _readings(version: str) -> BwrapReadings:
    return BwrapReadings(
        path="/usr/local/bin/bwrap",
        version=version,
        version_tuple=(0, 13, 1),
        minimum_version=(0, 8, 0),
        required_options=(),
        offered_options=frozenset(),
        max_user_namespaces=128,
    )


def _record_as_the_image_writes_it(path: Path, args: dict[str, str]) -> None:
    """Runs the Dockerfile's own printf line with these build arguments."""
    (command,) = re.findall(r"(printf '.*?' \\\n.*?)\\\n\s+> /out/opt", DOCKERFILE, re.S)
    script = command.replace("\\\n", " ")
    done = subprocess.run(
        ["sh", "-c", f"{script} > {path}"],
        env=args,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stderr == ""


@pytest.fixture
def run(work_base: Path) -> Run:
    made = bare_run(bare_tree(work_base), Layer.BUBBLEWRAP, stream=io.StringIO())
    # The first two checks of the layer section, the ones check_provenance makes.
    made.checks.begin(Section("layer", c.PINNED_VERSION, c.BUILD_RECORD))
    return made


def _lines(run: Run) -> list[str]:
    stream = run.checks.stream
    assert isinstance(stream, io.StringIO)
    # The check lines, without the section's header.
    return [line for line in stream.getvalue().splitlines() if not line.startswith("== ")]


def test_locally_without_a_record_both_lines_skip_with_what_was_found(
    run: Run, tmp_path: Path
) -> None:
    check_provenance(run, _readings("bubblewrap 0.8.0"), record_path=tmp_path / "none.json")
    first, second = _lines(run)
    assert first.startswith("SKIP bwrap reports the pinned version: bubblewrap 0.13.1 — ")
    assert "/usr/local/bin/bwrap, which reports 'bubblewrap 0.8.0'" in first
    assert second.startswith("SKIP the image records the pinned source")
    assert f"no build record at {tmp_path / 'none.json'}" in second
    assert run.checks.passed == 0


def test_in_the_cluster_a_missing_record_fails(run: Run, tmp_path: Path) -> None:
    cluster = replace(run, in_cluster=True)
    with pytest.raises(CheckFailed):
        check_provenance(
            cluster, _readings(BUBBLEWRAP.reported_version), record_path=tmp_path / "none.json"
        )
    assert _lines(run)[-1].startswith("FAIL the image records the pinned source")


def test_a_rehearsal_without_a_record_skips_saying_it_is_a_rehearsal(
    run: Run, tmp_path: Path
) -> None:
    rehearsal = replace(run, in_cluster=True, rehearsal=True)
    check_provenance(rehearsal, _readings("bubblewrap 0.8.0"), record_path=tmp_path / "none.json")
    first, second = _lines(run)
    assert first.startswith(
        "SKIP bwrap reports the pinned version: bubblewrap 0.13.1 — a rehearsal"
    )
    assert second.startswith("SKIP the image records the pinned source")
    assert run.checks.passed == 0


def test_in_the_cluster_another_version_fails_naming_both(run: Run, tmp_path: Path) -> None:
    cluster = replace(run, in_cluster=True)
    with pytest.raises(CheckFailed):
        check_provenance(cluster, _readings("bubblewrap 0.11.0"), record_path=tmp_path / "x")
    assert _lines(run)[-1] == (
        "FAIL bwrap reports the pinned version: bubblewrap 0.13.1 (/usr/local/bin/bwrap reports "
        "'bubblewrap 0.11.0', the pin is 'bubblewrap 0.13.1') [bubblewrap.bwrap.pinned-version]"
    )


def test_the_images_own_record_of_the_pin_passes(run: Run, tmp_path: Path) -> None:
    record = tmp_path / "BUILD-INFO.json"
    _record_as_the_image_writes_it(record, bubblewrap_build_args())
    check_provenance(
        replace(run, in_cluster=True), _readings(BUBBLEWRAP.reported_version), record_path=record
    )
    assert _lines(run) == [
        "PASS bwrap reports the pinned version: bubblewrap 0.13.1 (/usr/local/bin/bwrap reports "
        "'bubblewrap 0.13.1', the pin is 'bubblewrap 0.13.1')",
        f"PASS the image records the pinned source bwrap was built from: v0.13.1, commit "
        f"{BUBBLEWRAP.commit} ({record}: v0.13.1, {BUBBLEWRAP.commit})",
    ]


def test_a_record_of_another_commit_fails_naming_both(run: Run, tmp_path: Path) -> None:
    record = tmp_path / "BUILD-INFO.json"
    other = "0" * 40
    _record_as_the_image_writes_it(record, {**bubblewrap_build_args(), "BWRAP_COMMIT": other})
    with pytest.raises(CheckFailed):
        # Wherever the run is, a record that is present is checked.
        check_provenance(run, _readings(BUBBLEWRAP.reported_version), record_path=record)
    assert f"commit '{other}', the pin is '{BUBBLEWRAP.commit}'" in _lines(run)[-1]


def test_the_dockerfile_takes_the_pin_only_as_build_arguments() -> None:
    declared = re.findall(r"^ARG (BWRAP_\w+)(=.*)?$", DOCKERFILE, re.M)
    assert {name for name, _ in declared} == set(bubblewrap_build_args())
    assert all(default == "" for _, default in declared), "a build argument has a default"
    assert BUBBLEWRAP.commit not in DOCKERFILE and BUBBLEWRAP.version not in DOCKERFILE
