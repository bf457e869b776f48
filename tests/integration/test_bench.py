"""`make bench`, small: every section runs and prints its figures beside their goals, and the
cases at once all pass and share nothing. The figures themselves are not judged here: they
depend on the machine and its load (docs/performance.md)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from app.core.repo import REPO_ROOT

pytestmark = pytest.mark.integration


def test_a_small_bench_prints_every_figure_beside_its_goal() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--repeat", "2", "--cases", "1", "--concurrent", "2"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    for figure in (
        r"plain worker, same uid +[\d.]+ ms +goal <= 20 ms: (met|MISSED)",
        r"under bubblewrap +[\d.]+ ms +adds +[+-][\d.]+ ms .* goal <= \+5 ms: (met|MISSED)",
        r"under nono +[\d.]+ ms +adds +[+-][\d.]+ ms .* goal <= \+5 ms: (met|MISSED)",
        r"bubblewrap +wall +[\d.]+ s +goal <= 2\.0 s: (met|MISSED)",
        r"nono +wall +[\d.]+ s +goal <= 2\.0 s: (met|MISSED)",
        r"bubblewrap +ready +\d+ ms wall, +\d+ ms CPU; rendered +\d+ ms wall, +\d+ ms CPU: "
        r"+[\d.]+% of the case's wall, +([\d.]+% of its CPU|CPU share n/a) +goal <= 5%: "
        r"(met|MISSED)",
        r"nono +ready .* goal <= 5%: (met|MISSED)",
        r"credential-digest +[\d.]+ MiB +[\d.]+ s +\d+",
        r"limit +256 MiB +2 s +64",
        r"interpreter and imports +\d+",
        r"report page +\d+ +\d+",
        r"supplier proxy +\d+",
        r"valid reads +[\d.]+ /s, p50 +[\d.]+ ms, p99 +[\d.]+ ms, \d+ failed +goal p99 <= 50 ms: "
        r"(met|MISSED)",
        r"server peak RSS +[\d.]+ MiB, at most \d+ threads +goal < 64 MiB: (met|MISSED)",
        r"2 of 2 passed +goal all 2: met",
        r"none shared: 2 run ids",
    ):
        assert re.search(figure, out), f"{figure!r} not in:\n{out}"
