"""The hostile-input table's rows for options and cluster settings: --out, --workdir, --layer and
the cluster environment, each refused with exit 2 before anything exists."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from app.core import cluster_env
from tests.support.cluster_settings import cluster_environment
from tests.support.input_folder import (
    ESC,
    Folder,
    Row,
    claimed_by_a_live_run,
    outside_path,
)


def out_row(name: str, prepare: Callable[[Folder], object], fragment: str) -> Row:
    def build(f: Folder) -> list[str]:
        prepare(f)
        return f.argv()

    return Row(name, build, fragment)


def long_work_dir(f: Folder, length: int) -> Path:
    """A work directory in the row's folder whose path is ``length`` characters long."""
    name = "w" * (length - len(str(f.base)) - 1)
    return f.base / name


OPTION_ROWS = [
    # --- --out ---------------------------------------------------------------------------------
    out_row(
        "--out not empty",
        lambda f: (f.out.mkdir(), (f.out / "old.md").write_text("x")),
        "is not empty; a run never mixes its files with others'",
    ),
    out_row("--out is a file", lambda f: f.out.write_text("x"), "is a file, not a folder"),
    out_row(
        "--out is a link",
        lambda f: ((f.base / "real").mkdir(), f.out.symlink_to(f.base / "real")),
        "is a symbolic link",
    ),
    Row(
        "--out parent missing",
        lambda f: f.argv(out=f.base / "no" / "such" / "out"),
        "its parent",
    ),
    Row(
        "--out is /proc",
        lambda f: f.argv(out="/proc"),
        "--out /proc: is not empty",
    ),
    Row(
        "--out inside /proc",
        lambda f: f.argv(out=outside_path(f, Path("/proc/analyst-out"))),
        "cannot create a folder in /proc",
    ),
    Row(
        "--out inside /sys",
        lambda f: f.argv(out=outside_path(f, Path("/sys/fs/analyst-out"))),
        "cannot create a folder in /sys/fs (Operation not permitted)",
    ),
    Row(
        "--out claimed by a run still going",
        claimed_by_a_live_run,
        "another run is writing its report there now",
    ),
    Row(
        "demo --out is a file",
        lambda f: (f.out.write_text("x"), f.argv("--out", str(f.out), command="demo"))[1],
        "is a file",
    ),
    # --- --workdir -----------------------------------------------------------------------------
    Row(
        "--workdir relative",
        lambda f: f.argv(workdir="relative/work"),
        "--workdir relative/work: must be an absolute path",
    ),
    Row(
        "--workdir is a file",
        lambda f: (f.work.write_text("x"), f.argv())[1],
        "is a file, not a folder",
    ),
    Row(
        "--workdir parent missing",
        lambda f: f.argv(workdir=f.base / "no" / "work"),
        "its parent",
    ),
    Row(
        "--workdir in /tmp under bubblewrap",
        lambda f: f.argv(workdir=outside_path(f, Path("/tmp/analyst-work"))),
        "lies in /tmp, which bubblewrap replaces in every tool process",
    ),
    Row(
        "--workdir in /usr under bubblewrap",
        lambda f: f.argv(workdir=outside_path(f, Path("/usr/local/analyst"))),
        "lies in /usr, which bubblewrap shows to every tool process, the run's secrets with it",
    ),
    Row(
        "--workdir in /usr under nono",
        lambda f: f.argv(workdir=outside_path(f, Path("/usr/local/analyst")), layer="nono"),
        "which nono's profiles let every tool process read",
    ),
    Row(
        "--workdir in /proc under bubblewrap",
        lambda f: f.argv(workdir=outside_path(f, Path("/proc/analyst-work"))),
        "lies in /proc",
    ),
    Row(
        "--workdir a link into /tmp",
        lambda f: (
            f.work.symlink_to(outside_path(f, Path(tempfile.mkdtemp(prefix="analyst-row-")))),
            f.argv(),
        )[1],
        "lies in /tmp",
    ),
    Row(
        "demo --workdir in /tmp, fine for nono but not bubblewrap",
        lambda f: f.argv(command="demo", workdir=outside_path(f, Path("/tmp/analyst-demo"))),
        "lies in /tmp",
    ),
    Row(
        "--workdir too long for the socket a run binds",
        lambda f: f.argv(workdir=long_work_dir(f, 51)),
        "is too long: a run binds a unix socket at",
    ),
    Row(
        "--workdir with a newline under bubblewrap",
        lambda f: f.argv(workdir=f.base / "wo\nrk"),
        "wo\\nrk': holds a control or invisible character",
    ),
    Row(
        "--workdir with a newline under nono",
        lambda f: f.argv(workdir=f.base / "wo\nrk", layer="nono"),
        "holds a control or invisible character: every check line names the run's paths",
    ),
    Row(
        "--workdir with an escape sequence",
        lambda f: f.argv(workdir=f.base / f"{ESC}[31mwork"),
        "\\x1b[31mwork': holds a control or invisible character",
    ),
    Row(
        "--workdir not UTF-8",
        lambda f: f.argv(workdir=os.fsdecode(os.fsencode(f.base) + b"/w\xffrk")),
        "\\udcffrk': is not valid UTF-8",
    ),
    Row(
        "--workdir with $ under nono",
        lambda f: f.argv(workdir=f.base / "a$b", layer="nono"),
        "holds $, which nono refuses in the path of the key its proxy reads",
    ),
    Row(
        "--workdir with a .. segment under nono",
        lambda f: (f.work.mkdir(), f.argv(workdir=f"{f.work}/../work", layer="nono"))[1],
        "holds a .. segment, which nono refuses",
    ),
    Row(
        "--workdir inside /proc under nono",
        lambda f: f.argv(workdir=outside_path(f, Path("/proc/analyst-work")), layer="nono"),
        "/proc/analyst-work: cannot be written: creating it fails (No such file or directory)",
    ),
    Row(
        "--workdir inside /sys",
        lambda f: f.argv(workdir=outside_path(f, Path("/sys/fs/analyst-work"))),
        "cannot be written: creating it fails (Operation not permitted)",
    ),
    # --- --out and --workdir together ----------------------------------------------------------
    Row(
        "--out is the --workdir",
        lambda f: f.argv(workdir=f.work, out=f.work),
        "is the work directory itself (--workdir",
    ),
    Row(
        "--out inside the --workdir",
        lambda f: (f.work.mkdir(), f.argv(out=f.work / "out"))[1],
        "lies inside the work directory (--workdir",
    ),
    Row(
        "--workdir inside --out",
        lambda f: (f.out.mkdir(), f.argv(workdir=f.out / "work"))[1],
        "holds the work directory (--workdir",
    ),
    Row(
        "demo --out holds the --workdir",
        lambda f: (
            f.out.mkdir(),
            f.argv("--out", str(f.out), command="demo", workdir=f.out / "work"),
        )[1],
        "holds the work directory (--workdir",
    ),
    Row(
        "--out with a newline",
        lambda f: f.argv(out=f.base / "o\nut"),
        "o\\nut': holds a control or invisible character",
    ),
    Row(
        "--out with a right-to-left override",
        lambda f: f.argv(out=f.base / "out\u202etxt.md"),
        "\\u202etxt.md': holds a control or invisible character",
    ),
    # --- the command line and the cluster's settings -------------------------------------------
    Row("unknown layer", lambda f: f.argv(layer="docker"), "invalid choice: 'docker'"),
    Row("unknown option", lambda f: f.argv("--fast"), "unrecognized arguments: --fast"),
    Row("no layer", lambda f: ["run", "--case", str(f.case)], "--layer"),
    Row(
        "ANALYST_MODE misspelt",
        lambda f: (f.env.update(cluster_environment(ANALYST_MODE="clustr")), f.argv())[1],
        "ANALYST_MODE='clustr'",
    ),
    Row(
        "cluster bucket missing",
        lambda f: (f.env.update(cluster_environment(**{cluster_env.BUCKET: None})), f.argv())[1],
        f"{cluster_env.BUCKET} is not set",
    ),
    Row(
        "cluster supplier URL not https",
        lambda f: (
            f.env.update(
                cluster_environment(**{cluster_env.SUPPLIER_API_URL: "http://supplier:80"})
            ),
            f.argv(),
        )[1],
        f"{cluster_env.SUPPLIER_API_URL}='http://supplier:80' is not an https://host[:port] URL",
    ),
]
