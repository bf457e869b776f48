"""Settings that once broke a run half-way, run black-box through `python -m app.controller`.

Each unusable one is now refused before anything exists: exit 2, one line on stderr naming the
option and what it accepts, nothing left on disk; and `doctor` with the same setting says the
layer cannot run, in the same words. The strict umask, which broke every run, now changes
nothing: the run completes and its tree has the modes it has under the conventional umask.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nono_py
import pytest

from app.controller.doctor import FILE_SIZE_LIMIT, WORK_DIR_HOLDS_A_RUN
from app.core.errors import shown
from app.tools.nono.answers import NONO_REFUSED_CHARACTERS
from tests.support.entry_points import (
    controller,
    doctor_fail,
    in_mount_namespace,
    in_shell,
    listing,
    the_one_line,
)
from tests.support.faults import processes_of

pytestmark = pytest.mark.integration

LAYERS = ("bubblewrap", "nono")
# The run id's characters and what follows them in the one socket a run binds: its run tree's
# attacks/controller.sock; a unix socket's path holds at most 107 bytes (unix(7)).
SOCKET_BELOW_BASE = len("/") + 32 + len("/attacks/controller.sock")
LONGEST_BASE = 107 - SOCKET_BELOW_BASE


def _refused_alike(
    layer: str, work: Path, out: Path, *, prefix: list[str] | None = None, watch: bool = True
) -> str:
    """`run` refuses the work directory with exit 2 and one line, creating nothing (in the
    folder that holds it, when ``watch``); `doctor` fails the same check with the same words.
    Returns the line."""
    parent = work.parent
    before = listing(parent) if watch else set()
    ran = controller(
        "run", "--layer", layer, "--workdir", str(work), "--out", str(out), prefix=prefix or []
    )
    assert ran.returncode == 2, ran.stderr
    line = the_one_line(ran)
    assert line.startswith(f"error (bad input): --workdir {shown(work)}: "), line
    assert ran.stdout == ""
    assert (listing(parent) if watch else set()) == before
    assert not work.exists() or work.is_dir()
    assert not out.exists()
    assert processes_of(work) == []
    checked = controller("doctor", "--layer", layer, "--workdir", str(work), prefix=prefix or [])
    assert checked.returncode == 3, checked.stdout
    found, fix = doctor_fail(checked, WORK_DIR_HOLDS_A_RUN)
    assert line == f"error (bad input): {found}; {fix}"
    assert f"{layer} cannot run here" in checked.stdout
    return line


# --- 1: a strict umask ----------------------------------------------------------------------


def _modes(tree: Path) -> dict[str, str]:
    """Every path of a kept run tree with its mode, the run id replaced by a placeholder."""
    return {
        re.sub(r"[0-9a-f]{32}", "<run>", str(path.relative_to(tree))): oct(path.stat().st_mode)
        for path in [tree, *tree.rglob("*")]
        if not path.is_symlink()
    }


def _kept_run(layer: str, base: Path, umask: str) -> dict[str, str]:
    work, out = base / f"work-{umask}", base / f"out-{umask}"
    done = controller(
        "run", "--layer", layer, "--workdir", str(work), "--out", str(out), "--keep-workdir",
        prefix=in_shell(f"umask {umask}"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    (tree,) = work.iterdir()
    return {**_modes(tree), **{f"out/{k}": v for k, v in _modes(out).items()}}


@pytest.mark.parametrize("layer", LAYERS)
def test_a_strict_umask_completes_and_the_tree_keeps_the_layouts_modes(
    layer: str, work_base: Path
) -> None:
    """Under umask 077, stricter than the 027 that broke every run (the proposals folder came
    out drwxr-x---, unreadable for the tool's uid), the run completes, and every file and
    folder of its tree and its report has the mode it has under 022."""
    conventional = _kept_run(layer, work_base, "022")
    assert conventional["run/reader/in/proposals"] == oct(0o40755)
    assert _kept_run(layer, work_base, "077") == conventional


# --- 2: a work directory too long for the run's socket ---------------------------------------


@pytest.mark.parametrize("layer", LAYERS)
def test_the_longest_work_directory_that_fits_runs_and_one_byte_more_is_refused(
    layer: str, work_base: Path
) -> None:
    fits = work_base / ("w" * (LONGEST_BASE - len(str(work_base)) - 1))
    assert len(str(fits)) == LONGEST_BASE == 50
    too_long = Path(f"{fits}x")
    line = _refused_alike(layer, too_long, work_base / "refused-out")
    assert line == (
        f"error (bad input): --workdir {too_long}: is too long: a run binds a unix socket at "
        f"{too_long}/<run id>/attacks/controller.sock, 108 bytes with its 32-character run id, "
        "over the 107 a socket's path can hold; pass a folder of at most 50 bytes, such as the "
        "default /var/tmp/analyst-<uid>"
    )
    done = controller(
        "run", "--layer", layer, "--workdir", str(fits), "--out", str(work_base / "o")
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr


# --- 3: a work directory that cannot be created ----------------------------------------------


@pytest.mark.parametrize("layer", LAYERS)
def test_a_work_directory_on_a_read_only_mount_is_refused_before_anything(
    layer: str, work_base: Path
) -> None:
    """A read-only bind mount of an existing folder, in the commands' own mount namespace:
    neither a new base in it nor the folder itself as the base can be written."""
    frozen = work_base / "frozen"
    frozen.mkdir()
    (frozen / "kept").write_text("x")
    read_only = in_mount_namespace(
        f"mount --bind {frozen} {frozen}; mount -o remount,bind,ro {frozen}"
    )
    for work, made in ((frozen / "work", "it"), (frozen, "a folder in it")):
        line = _refused_alike(layer, work, work_base / "out", prefix=read_only)
        assert line == (
            f"error (bad input): --workdir {work}: cannot be written: creating {made} fails "
            "(Read-only file system); pass a folder on a writable filesystem"
        )
    assert sorted(os.listdir(frozen)) == ["kept"]


def test_a_work_directory_in_proc_is_refused_under_nono_too(work_base: Path) -> None:
    """bubblewrap refuses /proc for what it mounts there; nono refused nothing until the tree
    could not be made."""
    work = Path("/proc/analyst-work")
    line = _refused_alike("nono", work, work_base / "out", watch=False)
    assert not work.exists()
    assert line == (
        "error (bad input): --workdir /proc/analyst-work: cannot be written: creating it fails "
        "(No such file or directory); pass a folder on a writable filesystem"
    )


# --- 12: characters a later part refuses ------------------------------------------------------


@pytest.mark.parametrize("layer", LAYERS)
def test_a_newline_in_the_work_directory_is_refused_on_one_line(
    layer: str, work_base: Path
) -> None:
    """It used to reach nono's proxy (a confinement FAIL split over two lines) and every check
    line naming the run's paths."""
    work = work_base / "wo\nrk"
    line = _refused_alike(layer, work, work_base / "out")
    assert line == (
        f"error (bad input): --workdir {str(work)!r}: holds a control or invisible character: "
        "every check line names the run's paths, one line each; pass a path of printable "
        "characters"
    )


def test_every_character_nono_refuses_in_a_path_is_refused_up_front(work_base: Path) -> None:
    """nono-py itself, for every ASCII character in the folder of the key file its proxy
    reads: what it refuses is exactly the work directory check's list (the control characters
    among them are refused for both layers); everything else it takes."""
    refused = set()
    for code in range(1, 128):
        character = chr(code)
        if character == "/":
            continue
        folder = work_base / f"key{character}folder"
        folder.mkdir()
        key = folder / "key"
        key.write_text("k")
        route = nono_py.RouteConfig(
            "/p", "https://localhost:9", credential_key=f"file://{key}", env_var="KEY",
            inject_header="X-Api-Key", credential_format="{}", endpoint_rules=[], tls_ca=None,
        )  # fmt: skip
        try:
            nono_py.start_proxy(nono_py.ProxyConfig(allowed_hosts=[], routes=[route])).shutdown()
        except RuntimeError as error:
            assert "forbidden character" in str(error), error
            refused.add(character)
    control = {c for c in map(chr, range(1, 128)) if not c.isprintable()}
    assert refused - control == NONO_REFUSED_CHARACTERS - control
    assert refused & control <= NONO_REFUSED_CHARACTERS | control
    assert {"\n", "\r"} <= refused


@pytest.mark.parametrize("text", ["a$b", "a|b", "a;b"])
def test_a_character_nono_refuses_is_refused_for_nono_alone(text: str, work_base: Path) -> None:
    work = work_base / text
    line = _refused_alike("nono", work, work_base / "out")
    assert line.startswith(f"error (bad input): --workdir {work}: holds {text[1]}, which nono")
    checked = controller("doctor", "--layer", "bubblewrap", "--workdir", str(work))
    assert f"PASS {WORK_DIR_HOLDS_A_RUN}: {work}" in checked.stdout


# --- 8: --out and --workdir overlapping -------------------------------------------------------


@pytest.mark.parametrize(
    ("work", "out", "relation"),
    [
        ("shared", "shared", "is the work directory itself"),
        ("work", "work/out", "lies inside the work directory"),
        ("out/work", "out", "holds the work directory"),
    ],
)
def test_overlapping_out_and_workdir_are_refused_before_anything(
    work: str, out: str, relation: str, work_base: Path
) -> None:
    """They were accepted: the whole run executed, then failed with the work directory's base
    left inside --out."""
    for folder in {Path(work).parts[0], Path(out).parts[0]}:
        (work_base / folder).mkdir(exist_ok=True)
    before = listing(work_base)
    ran = controller(
        "run", "--layer", "nono", "--workdir", str(work_base / work), "--out", str(work_base / out)
    )
    assert ran.returncode == 2, ran.stderr
    assert the_one_line(ran) == (
        f"error (bad input): --out {work_base / out}: {relation} (--workdir "
        f"{work_base / work}); give the report files and the run's private directories "
        "separate folders"
    )
    assert listing(work_base) == before


# --- 20: a file size limit below a tool's own -------------------------------------------------


def test_a_low_file_size_limit_is_refused_with_its_fix_and_the_lowest_that_works_runs(
    work_base: Path,
) -> None:
    """`ulimit -f 200` ended in exit 3 with the worker's ValueError; a limit of 1 MiB, a tool's
    own, is enough for a whole run."""
    low = in_shell("ulimit -f 200")
    ran = controller(
        "run", "--layer", "bubblewrap", "--workdir", str(work_base / "w"),
        "--out", str(work_base / "o"), prefix=low,
    )  # fmt: skip
    assert ran.returncode == 2, ran.stderr
    line = the_one_line(ran)
    assert line == (
        "error (bad input): the hard file size limit (ulimit -f, RLIMIT_FSIZE) is 204800 bytes: "
        "a tool's output file may reach 1048576 bytes, held there by the same limit set lower "
        "for the tool; raise it before the run: ulimit -f unlimited (or, in bash's blocks of "
        "1024 bytes, at least 1024)"
    )
    assert listing(work_base) == set()
    checked = controller("doctor", prefix=low)
    assert checked.returncode == 3
    found, fix = doctor_fail(checked, FILE_SIZE_LIMIT)
    assert line == f"error (bad input): {found}; {fix}"
    enough = controller(
        "run", "--layer", "bubblewrap", "--workdir", str(work_base / "w"),
        "--out", str(work_base / "o"), prefix=in_shell("ulimit -f 1024"),
    )  # fmt: skip
    assert enough.returncode == 0, enough.stdout[-2000:] + enough.stderr
