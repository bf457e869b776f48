"""Runs of one layer's own steps with one policy element left out, on shared services.

Starting moto and the supplier API costs more than a layer's checks, so one set of services
serves every removal of a test module. Each removal still gets everything a run has of its
own: a fresh run tree with the case staged, a fresh layer (and under nono fresh proxies), a
fresh check log. It runs the steps where a layer's checks can fail (process and boundary;
under nono also the writer's draft submission, the one allowed POST), through the real
checks, and returns the record of the one check that failed.
"""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from app.controller.phases.identity import StoredCase, identity_and_storage
from app.controller.phases.staging import stage_inputs
from app.controller.prepared_run import prepared_run
from app.controller.run_plan import RunOptions, plan_run
from app.core.catalogue import Section
from app.core.checklog import CheckFailed, CheckLog, CheckRecord
from app.core.repo import SAMPLE_CASE
from app.core.roles import Layer
from app.core.run import Run
from app.core.run_tree import create_run
from app.tools.at_once import made_at_once
from app.tools.layer import ConfinementLayer
from tests.support.sample_draft import sample_draft


@dataclass(frozen=True)
class Shared:
    """Services started once, the run object they were built for, and the stored case."""

    run: Run
    stored: StoredCase
    base: Path


@contextmanager
def shared_services() -> Iterator[Shared]:
    base = Path(tempfile.mkdtemp(prefix="analyst-elements-", dir="/var/tmp"))
    base.chmod(0o755)
    try:
        options = RunOptions(layer=Layer.BUBBLEWRAP, case_dir=SAMPLE_CASE, work_base=base / "w")
        with prepared_run(plan_run(options), io.StringIO()) as prepared:
            stored = identity_and_storage(prepared.run, prepared.services, prepared.folder)
            yield Shared(prepared.run, stored, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def fresh_run(shared: Shared, layer: Layer) -> Iterator[tuple[Run, io.StringIO]]:
    """A run of its own (tree, staged case, check log) on the shared services."""
    paths = create_run(shared.base / "runs", shared.run.tool)
    stream = io.StringIO()
    run = replace(
        shared.run,
        run_id=paths.run_id,
        layer=layer,
        paths=paths,
        checks=CheckLog(stream=stream, make_at_once=made_at_once),
    )
    try:
        stage_inputs(run, shared.stored)
        yield run, stream
    finally:
        shutil.rmtree(paths.top, ignore_errors=True)


def check_lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line[:5] in ("PASS ", "FAIL ")]


def steps_outcome(
    shared: Shared, layer: Layer, make_layer: Callable[[Run], ConfinementLayer]
) -> tuple[CheckFailed | None, list[str]]:
    """Runs the layer's steps under ``make_layer``'s policy; returns the check failure that
    stopped them (None if every check passed) and the PASS and FAIL lines printed."""
    with fresh_run(shared, layer) as (run, stream):
        built = make_layer(run)
        try:
            built.preflight()
            steps = built.checks()
            try:
                steps.process()
                steps.boundary()
                if layer is Layer.NONO:
                    run.checks.begin(Section("business", *steps.submission))
                    draft = built.role_path("writer", "out", "draft.txt")
                    text, expected = sample_draft(run)
                    built.run_tool("writer", "write-file", draft, text)
                    steps.submit_draft(Path(draft), expected)
            except CheckFailed as failed:
                return failed, check_lines(stream)
        finally:
            built.close()
        return None, check_lines(stream)


def failing_check(
    shared: Shared, layer: Layer, make_layer: Callable[[Run], ConfinementLayer]
) -> CheckRecord:
    """Runs the layer's steps under ``make_layer``'s policy; returns the record of its one
    failed check, and checks that its FAIL line is the last line printed."""
    failed, lines = steps_outcome(shared, layer, make_layer)
    print("\n".join(lines[-3:]))
    assert failed is not None, "every check passed"
    fails = [line for line in lines if line.startswith("FAIL ")]
    assert len(fails) == 1, fails
    assert fails[0] == lines[-1], "checks went on after a FAIL"
    assert fails[0].endswith(f"[{failed.check_id}]"), "the FAIL line names its check"
    return failed.record
