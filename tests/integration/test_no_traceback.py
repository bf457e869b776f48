"""Every command a user can reach, fed options it cannot use: each ends with its documented
code and a message on stderr, never a traceback, and promptly (nothing waits on /dev/zero).

A table: the command, what it is given, the exit code, and a fragment of its last line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from app.controller.services.pki import RunPki, generate_run_pki
from tests.support.entry_points import clean_env, command

pytestmark = pytest.mark.integration

PY = sys.executable
CONTROLLER = [PY, "-m", "app.controller"]
SUPPLIER = [PY, "-m", "app.supplier_api"]
MANIFESTS = [PY, "-m", "infra.render_manifests"]
BENCH = [PY, "-m", "bench"]
REHEARSAL = [PY, "-m", "rehearsal"]
NOT_YAML = "apiVersion: v1\nclusters: [\n"
NOT_A_KUBECONFIG = "[]\n"


@dataclass(frozen=True)
class Bad:
    name: str
    argv: Callable[[Path], list[str]]
    code: int
    fragment: str


def _file(work_base: Path, name: str, text: str) -> str:
    (work_base / name).write_text(text)
    return str(work_base / name)


@cache
def _pki() -> RunPki:
    return generate_run_pki()


def _evidence(*options: str) -> list[str]:
    return [*CONTROLLER, "nitro-evidence", "--layer", "nono", "--namespace", "ns", *options]


def _serve(*options: str) -> Callable[[Path], list[str]]:
    """The supplier API's serve with every required option, some replaced by ``options``."""

    def argv(work_base: Path) -> list[str]:
        pki = _pki()
        given = {
            "--case-dir": "cases/rfp-001",
            "--key-file": _file(work_base, "key", "k\n"),
            "--cert": _file(work_base, "cert", pki.server_cert_pem.decode()),
            "--key": _file(work_base, "pkey", pki.server_key_pem.decode()),
            "--log": str(work_base / "log.jsonl"),
        }
        pairs = dict(zip(options[::2], options[1::2], strict=True))
        flat = [part for name, value in {**given, **pairs}.items() for part in (name, value)]
        return [*SUPPLIER, "serve", *flat]

    return argv


ROWS = [
    # --- the controller ------------------------------------------------------------------------
    Bad("controller, no command", lambda p: CONTROLLER, 2, "required: command"),
    Bad("controller, unknown command", lambda p: [*CONTROLLER, "deploy"], 2, "invalid choice"),
    Bad("run, unknown layer", lambda p: [*CONTROLLER, "run", "--layer", "docker"], 2, "docker"),
    Bad(
        "run, a case that is not there",
        lambda p: [*CONTROLLER, "run", "--layer", "nono", "--case", str(p / "none")],
        2,
        "not a case folder (no such directory)",
    ),
    Bad(
        "run, --workdir a file",
        lambda p: [*CONTROLLER, "run", "--layer", "nono", "--workdir", _file(p, "f", "x")],
        2,
        "is a file, not a folder",
    ),
    Bad(
        "run, --out /dev/null",
        lambda p: [*CONTROLLER, "run", "--layer", "nono", "--out", "/dev/null"],
        2,
        "--out /dev/null: is a file, not a folder",
    ),
    Bad(
        "demo, --out a file",
        lambda p: [*CONTROLLER, "demo", "--out", _file(p, "f", "x")],
        2,
        "is a file",
    ),
    Bad("doctor, unknown layer", lambda p: [*CONTROLLER, "doctor", "--layer", "x"], 2, "'x'"),
    Bad(
        "doctor, a relative --workdir",
        lambda p: [*CONTROLLER, "doctor", "--workdir", "relative"],
        3,
        "cannot run here",
    ),
    Bad(
        "guest-readings, an argument",
        lambda p: [*CONTROLLER, "guest-readings", "extra"],
        2,
        "unrecognized arguments: extra",
    ),
    Bad(
        "nitro-evidence, no namespace",
        lambda p: [*CONTROLLER, "nitro-evidence", "--layer", "nono"],
        2,
        "--namespace",
    ),
    Bad(
        "nitro-evidence, a kubeconfig that is not YAML",
        lambda p: _evidence("--kubeconfig", _file(p, "kubeconfig", NOT_YAML)),
        2,
        "kubeconfig is not valid YAML at line 3, column 1",
    ),
    Bad(
        "nitro-evidence, a kubeconfig of the wrong shape",
        lambda p: _evidence("--kubeconfig", _file(p, "kubeconfig", NOT_A_KUBECONFIG)),
        2,
        "is not one the Kubernetes client can read",
    ),
    Bad(
        "nitro-evidence, a kubeconfig that is a folder",
        lambda p: _evidence("--kubeconfig", str(p)),
        2,
        "Is a directory",
    ),
    Bad("case, no command", lambda p: [*CONTROLLER, "case"], 2, "required"),
    Bad(
        "case new, in /proc",
        lambda p: [*CONTROLLER, "case", "new", "/proc/my-case"],
        2,
        "/proc/my-case: cannot be created (No such file or directory); pass a folder on a "
        "writable filesystem",
    ),
    Bad(
        "case check, not a folder",
        lambda p: [*CONTROLLER, "case", "check", str(p / "none")],
        2,
        "not a case folder",
    ),
    # --- the supplier API ---------------------------------------------------------------------
    Bad("supplier API, no command", lambda p: SUPPLIER, 2, "required"),
    Bad("supplier API, no options", lambda p: [*SUPPLIER, "serve"], 2, "required"),
    Bad("supplier API, port -1", _serve("--port", "-1"), 2, "is not a port number"),
    Bad("supplier API, port 65536", _serve("--port", "65536"), 2, "is not a port number"),
    Bad(
        "supplier API, host 256.1.1.1",
        _serve("--host", "256.1.1.1"),
        2,
        "cannot listen on 256.1.1.1 port 0",
    ),
    Bad("supplier API, a key file that never ends", _serve("--key-file", "/dev/zero"), 2, "not a"),
    Bad(
        "supplier API, a certificate not PEM",
        _serve("--cert", "/etc/hostname"),
        2,
        "supplier API: cannot start: [SSL]",
    ),
    Bad("supplier API, no such case", _serve("--case-dir", "/nonexistent"), 2, "cannot read"),
    Bad(
        "supplier API, a log nowhere",
        _serve("--log", "/nonexistent/l"),
        2,
        "--log /nonexistent/l: No such file or directory",
    ),
    # --- the manifests, the bench, the rehearsal, the policy renderers ------------------------
    Bad("manifests, no such stack", lambda p: [*MANIFESTS, "--stack", "nope"], 2, "no stack"),
    Bad(
        "manifests, --out a file",
        lambda p: [*MANIFESTS, "--out", _file(p, "f", "x")],
        2,
        "is a file, not a folder",
    ),
    Bad(
        "manifests, --out in /proc",
        lambda p: [*MANIFESTS, "--out", "/proc/analyst-manifests"],
        2,
        "cannot write the manifests there",
    ),
    Bad("manifests, unknown target", lambda p: [*MANIFESTS, "--runtime-target", "x"], 2, "'x'"),
    Bad("bench, no samples", lambda p: [*BENCH, "--repeat", "0"], 2, "at least 1"),
    Bad("bench, no cases", lambda p: [*BENCH, "--cases", "-1"], 2, "at least 1"),
    Bad("bench, concurrent not a number", lambda p: [*BENCH, "--concurrent", "x"], 2, "'x'"),
    Bad("rehearsal, no command", lambda p: REHEARSAL, 2, "required"),
    Bad(
        "rehearsal, a change that is not there",
        lambda p: [*REHEARSAL, "run", "--layer", "nono", "--change", "nowhere:fn"],
        2,
        "--change nowhere:fn: No module named 'nowhere'",
    ),
    Bad(
        "rehearsal, a case id that is no id",
        lambda p: [*REHEARSAL, "all", "--case-id", "Bad Id"],
        2,
        "caseId",
    ),
    Bad(
        "policy renderer, unknown option",
        lambda p: [PY, "-m", "app.tools.bubblewrap.render", "--bogus"],
        2,
        "unrecognized arguments",
    ),
    Bad(
        "policy renderer, unknown option (nono)",
        lambda p: [PY, "-m", "app.tools.nono.render", "--bogus"],
        2,
        "unrecognized arguments",
    ),
]


def test_the_table_covers_every_command() -> None:
    programs = {row.name.split(",")[0].split(" ")[0] for row in ROWS}
    assert {"controller", "run", "demo", "doctor", "guest-readings", "nitro-evidence", "case",
            "supplier", "manifests", "bench", "rehearsal", "policy"} <= programs  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_a_bad_option_ends_with_its_code_and_a_message_never_a_traceback(
    row: Bad, work_base: Path
) -> None:
    done = command(row.argv(work_base), env=clean_env(), timeout=120)
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-3000:]
    assert done.returncode == row.code, output[-3000:]
    assert row.fragment in output, output[-3000:]
