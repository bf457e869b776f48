"""The hostile-input table's rows for options and cluster settings: --out, --workdir, --layer and
the cluster environment, each refused with exit 2 before anything exists."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

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


URL: Final = cluster_env.SUPPLIER_API_URL
KEY: Final = cluster_env.SUPPLIER_KEY_FILE
CA: Final = cluster_env.SUPPLIER_CA_FILE
TOKEN: Final = cluster_env.POD_IDENTITY_TOKEN_FILE
AGENT: Final = cluster_env.POD_IDENTITY_URI
BUCKET: Final = cluster_env.BUCKET


def cluster_row(
    name: str, changes: Callable[[Folder], dict[str, str | None]], fragment: str
) -> Row:
    """A row in cluster mode: every file the settings name is real (in the row's folder) but
    for what ``changes`` makes of the environment."""

    def build(f: Folder) -> list[str]:
        f.env.update(cluster_environment(f.base, **changes(f)))
        return f.argv()

    return Row(name, build, fragment)


def written(f: Folder, name: str, data: bytes) -> Path:
    path = f.base / name
    path.write_bytes(data)
    return path


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
        lambda f: (f.env.update(cluster_environment(f.base, ANALYST_MODE="clustr")), f.argv())[1],
        "ANALYST_MODE='clustr'",
    ),
    cluster_row(
        "cluster bucket missing", lambda f: {BUCKET: None}, f"{BUCKET} is not set; the analyst Job"
    ),
    cluster_row(
        "cluster supplier URL not https",
        lambda f: {URL: "http://supplier:80"},
        f"{URL}='http://supplier:80': is not an https:// URL; {URL} must be an https://host[:port]",
    ),
    cluster_row(
        "cluster supplier URL with a port not a number",
        lambda f: {URL: "https://localhost:abc"},
        f"{URL}='https://localhost:abc': is not a URL (Port could not be cast to integer value",
    ),
    cluster_row(
        "cluster supplier URL with a port out of range",
        lambda f: {URL: "https://localhost:99999"},
        f"{URL}='https://localhost:99999': is not a URL (Port out of range 0-65535)",
    ),
    cluster_row(
        "cluster supplier URL with a newline in its host, which urlsplit drops",
        lambda f: {URL: "https://supplier\n.evil:8443"},
        f"{URL}='https://supplier\\n.evil:8443': holds whitespace or a control character",
    ),
    cluster_row(
        "cluster supplier URL with an open bracket",
        lambda f: {cluster_env.SUPPLIER_API_ALIAS_URL: "https://[::1"},
        "SUPPLIER_API_ALIAS_URL='https://[::1': is not a URL (Invalid IPv6 URL)",
    ),
    cluster_row(
        "cluster supplier URL with a path",
        lambda f: {URL: "https://supplier:8443/v1?x=1"},
        "'https://supplier:8443/v1?x=1': has a path, a query or a fragment",
    ),
    cluster_row(
        "cluster supplier URL with a host that is no name",
        lambda f: {URL: "https://sup_plier:8443"},
        "its host is not a host name or an IP address",
    ),
    cluster_row(
        "cluster key file missing",
        lambda f: {KEY: str(f.base / "no-key")},
        "-key': cannot be read (No such file or directory); SUPPLIER_KEY_FILE must be a readable",
    ),
    cluster_row(
        "cluster key file a device that never ends",
        lambda f: {KEY: "/dev/zero"},
        f"{KEY}='/dev/zero': is not a regular file",
    ),
    cluster_row(
        "cluster key file empty but for a newline",
        lambda f: {KEY: str(written(f, "key-empty", b"\n"))},
        "key-empty': is empty; SUPPLIER_KEY_FILE must be a file holding the supplier API key",
    ),
    cluster_row(
        "cluster CA file missing",
        lambda f: {CA: str(f.base / "no-ca.crt")},
        "no-ca.crt': cannot be read (No such file or directory)",
    ),
    cluster_row(
        "cluster CA file not PEM",
        lambda f: {CA: str(written(f, "ca.txt", b"not a certificate\n"))},
        "ca.txt': holds no PEM certificate; SUPPLIER_CA_FILE must be a PEM file of the CA",
    ),
    cluster_row(
        "cluster token file missing",
        lambda f: {TOKEN: str(f.base / "no-token")},
        "no-token': cannot be read (No such file or directory); "
        "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE must be a readable file",
    ),
    cluster_row(
        "cluster token file a directory",
        lambda f: {TOKEN: str(f.base)},
        "': is not a regular file; AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE must be a regular file",
    ),
    cluster_row(
        "cluster token ending in a newline",
        lambda f: {TOKEN: str(written(f, "token-nl", b"eyJhbGciOi.a.b\n"))},
        "token-nl': ends in a newline; AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE must be the "
        "projected service account token",
    ),
    cluster_row(
        "cluster credential URI that botocore refuses",
        lambda f: {AGENT: "http://10.0.0.1/v1/credentials"},
        "'http://10.0.0.1/v1/credentials': is refused by botocore, which takes http:// only",
    ),
    cluster_row(
        "cluster credential URI not a URL",
        lambda f: {AGENT: "169.254.170.23"},
        f"{AGENT}='169.254.170.23': is not a URL (its host is not a host name or an IP address)",
    ),
    cluster_row(
        "cluster credential URI of another scheme",
        lambda f: {AGENT: "file:///etc/passwd"},
        "'file:///etc/passwd': is not a URL",
    ),
    cluster_row(
        "cluster Region malformed",
        lambda f: {cluster_env.REGION: "not_a_region!"},
        "AWS_REGION='not_a_region!': is not an AWS Region name; AWS_REGION must be a Region name "
        "such as us-west-2",
    ),
    cluster_row(
        "cluster bucket malformed",
        lambda f: {BUCKET: "Bad..Bucket"},
        f"{BUCKET}='Bad..Bucket': is not an S3 bucket name",
    ),
    cluster_row(
        "cluster role name malformed",
        lambda f: {cluster_env.ROLE_NAME: "role/with/slashes"},
        "ANALYST_ROLE_NAME='role/with/slashes': is not an IAM role name",
    ),
    cluster_row(
        "cluster model id with a newline",
        lambda f: {cluster_env.MODEL_ID: "model\nid"},
        "ANALYST_MODEL_ID='model\\nid': is not a Bedrock model id",
    ),
    cluster_row(
        "cluster rehearsal switch of another value",
        lambda f: {cluster_env.REHEARSAL: "yes"},
        "ANALYST_REHEARSAL='yes': is not '1'",
    ),
    cluster_row(
        "cluster settings, several unusable",
        lambda f: {cluster_env.REGION: "x", BUCKET: None, CA: "/nonexistent"},
        f"{BUCKET} is not set; the analyst Job sets it (also unusable: {cluster_env.REGION}, {CA};",
    ),
]
