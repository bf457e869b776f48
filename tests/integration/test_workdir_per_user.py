"""Each user's own default work directory, black-box: root runs a case, then an ordinary user
does, on one machine, each with no --workdir; `doctor` agrees with `run` on every case of the
work directory, for each of them.

In a private mount namespace (``unshare -m``) with a tmpfs of its own on /var/tmp, so the
defaults (/var/tmp/analyst-<uid>) are the test's alone; the ordinary user is uid 1001 (no
account needed: setpriv), running the controller from a staged copy of the application and
its interpreter (tests/support/analyst_container.py), since this environment's interpreter
sits under root's 0700 home.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from app.tools.prerequisites import WORK_DIR_HOLDS_A_RUN
from tests.support.analyst_container import stage_image

pytestmark = pytest.mark.integration

USER = 1001
CLAIM_TRAVERSE = f"the work directory is open to the tool uid {USER}, so a tool can reach its files"


def _script(results: Path) -> str:
    """Each step's stdout, stderr and exit code go to ``results/<step>.{out,err,rc}``."""
    analyst = "/mnt/python/bin/python -m app.controller"
    user = (
        f"setpriv --reuid={USER} --regid={USER} --clear-groups "
        "env -i PATH=/usr/bin:/bin HOME=/var/tmp/home"
    )
    as_user = f"{user} {analyst}"
    roots = "--workdir /var/tmp/analyst-0"
    steps = [
        ("root-doctor", f"{analyst} doctor --layer nono"),
        ("root-run", f"{analyst} run --layer nono --out /var/tmp/root-out"),
        ("squat", f"mkdir -m 755 /var/tmp/analyst-{USER}"),
        ("user-doctor-squatted", f"{as_user} doctor --layer nono"),
        ("user-run-squatted", f"{as_user} run --layer nono --out /var/tmp/home/o"),
        ("unsquat", f"rmdir /var/tmp/analyst-{USER}"),
        ("user-doctor", f"{as_user} doctor --layer nono"),
        ("user-run", f"{as_user} run --layer nono --out /var/tmp/home/out"),
        ("user-doctor-roots", f"{as_user} doctor --layer nono {roots}"),
        ("user-run-roots", f"{as_user} run --layer nono {roots} --out /var/tmp/home/o"),
        (
            "user-doctor-variable",
            f"{user} ANALYST_WORKDIR=/var/tmp/home/work {analyst} doctor --layer nono",
        ),
        ("modes", f"stat -c '%n %a %u' /var/tmp/analyst-0 /var/tmp/analyst-{USER}"),
    ]
    lines = [
        "set -u",
        'mount --bind "$1" /mnt || exit 99',
        "mount -t tmpfs -o mode=1777,size=64m tmpfs /var/tmp || exit 99",
        f"mkdir /var/tmp/home && chown {USER}:{USER} /var/tmp/home",
        "cd /mnt/analyst",
    ]
    for name, command in steps:
        where = shlex.quote(str(results / name))
        lines.append(f"{command} > {where}.out 2> {where}.err; echo $? > {where}.rc")
    return "\n".join(lines)


def _step(results: Path, name: str) -> tuple[int, str, str]:
    read = lambda suffix: (results / f"{name}.{suffix}").read_text()  # noqa: E731
    return int(read("rc")), read("out"), read("err")


def _doctor_line(stdout: str, claim: str) -> str:
    (line,) = [line for line in stdout.splitlines() if f" {claim}" in line]
    return line


def test_root_then_an_ordinary_user_each_run_in_their_own_work_directory(tmp_path: Path) -> None:
    (tmp_path / "image").mkdir()
    image = stage_image(tmp_path / "image")
    results = tmp_path / "results"
    results.mkdir()
    done = subprocess.run(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            _script(results),
            "sh",
            str(tmp_path / "image"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert image.python == tmp_path / "image" / "python" / "bin" / "python"

    code, out, err = _step(results, "root-doctor")
    assert code == 0, out + err
    assert "work directory /var/tmp/analyst-0)" in out
    code, out, err = _step(results, "root-run")
    assert code == 0, out[-2000:] + err

    # Another user's folder where this user's default would be: refused by both, in the same
    # words, and doctor does not pass the tool's way through a folder the run refuses.
    code, out, err = _step(results, "user-doctor-squatted")
    assert code == 3, out + err
    found = _doctor_line(out, WORK_DIR_HOLDS_A_RUN)
    assert found.startswith(f"FAIL {WORK_DIR_HOLDS_A_RUN}: the default work directory ")
    assert f"/var/tmp/analyst-{USER}: belongs to uid 0, not to this user (uid {USER})" in found
    assert _doctor_line(out, CLAIM_TRAVERSE).startswith(f"SKIP {CLAIM_TRAVERSE}: not checked")
    code, out, err = _step(results, "user-run-squatted")
    assert code == 2, out + err
    assert err.splitlines() == [
        f"error (bad input): the default work directory /var/tmp/analyst-{USER}: belongs to uid 0, "
        f"not to this user (uid {USER}); remove it, or choose another folder with --workdir or "
        "ANALYST_WORKDIR"
    ]

    code, out, err = _step(results, "user-doctor")
    assert code == 0, out + err
    assert f"work directory /var/tmp/analyst-{USER})" in out
    assert "FAIL" not in out
    code, out, err = _step(results, "user-run")
    assert code == 0, out[-2000:] + err
    assert "ANALYST_COMPLETE=" in out

    # Root's folder, named on purpose: not writable by this user, and the fix says how to
    # choose another (never "a writable filesystem").
    code, out, err = _step(results, "user-run-roots")
    assert code == 2, out + err
    (line,) = err.splitlines()
    assert line == (
        "error (bad input): --workdir /var/tmp/analyst-0: cannot be written: creating a folder "
        "in it fails (Permission denied): /var/tmp/analyst-0 belongs to uid 0; pass a folder "
        f"this user (uid {USER}) can write, with --workdir or ANALYST_WORKDIR; with neither, each "
        "user has their own (/var/tmp/analyst-<uid>)"
    )
    code, out, _ = _step(results, "user-doctor-roots")
    assert code == 3
    assert _doctor_line(out, WORK_DIR_HOLDS_A_RUN) == (
        f"FAIL {WORK_DIR_HOLDS_A_RUN}: {line.removeprefix('error (bad input): ').split('; ')[0]}"
    )
    assert _doctor_line(out, CLAIM_TRAVERSE).startswith(f"SKIP {CLAIM_TRAVERSE}")

    code, out, err = _step(results, "user-doctor-variable")
    assert code == 0, out + err
    assert "work directory /var/tmp/home/work)" in out

    code, out, _ = _step(results, "modes")
    assert out.splitlines() == [
        "/var/tmp/analyst-0 711 0",
        f"/var/tmp/analyst-{USER} 700 {USER}",
    ]
