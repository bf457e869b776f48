"""Hostile input as data: every row is a case folder, an option or a setting that must be refused
with exit 2 and a message naming what is wrong, before anything of a run exists.

Each row runs the real command line in this process. The local and cluster services and the
run's guardian are replaced by tripwires, so a row whose input got as far as starting anything
fails; and every file under the row's own folder is listed before and after, so a row that left
anything behind (a run tree, a report folder, a staging folder) fails too.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from app.controller import cli
from app.controller.environment import ClusterMode, LocalMode
from app.controller.guardian import Guardian
from app.core import cluster_env
from app.core.repo import SAMPLE_CASE

GIB = 1024**3
ESC = "\x1b"


@dataclass
class Folder:
    """One row's own folder: a copy of the sample case, a work directory and a report path."""

    base: Path
    case: Path
    work: Path
    out: Path
    layer: str = "bubblewrap"
    env: dict[str, str] = field(default_factory=dict)
    # Paths outside ``base`` a row names; none of them may exist after the row.
    outside: list[Path] = field(default_factory=list)

    def argv(
        self,
        *extra: str,
        command: str = "run",
        workdir: Path | str | None = None,
        out: Path | str | None = None,
        layer: str | None = None,
    ) -> list[str]:
        base = [command, "--case", str(self.case), "--workdir", str(workdir or self.work)]
        if command == "run":
            base += ["--layer", layer or self.layer, "--out", str(out or self.out)]
        return [*base, *extra]

    def case_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((self.case / "case.json").read_text())
        return doc

    def write_case(self, doc: Any) -> None:
        (self.case / "case.json").write_text(json.dumps(doc))

    def edit_case(self, edit: Callable[[dict[str, Any]], None]) -> None:
        doc = self.case_doc()
        edit(doc)
        self.write_case(doc)

    def write_proposal(self, supplier_id: str, data: bytes) -> None:
        """Replaces a proposal and records its new digest, so the digest check passes."""
        (self.case / "proposals" / f"{supplier_id}.json").write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        self.edit_case(lambda d: _entry(d, supplier_id).update(sha256=digest))

    def edit_proposal(self, supplier_id: str, edit: Callable[[dict[str, Any]], None]) -> None:
        path = self.case / "proposals" / f"{supplier_id}.json"
        doc = json.loads(path.read_text())
        edit(doc)
        self.write_proposal(supplier_id, json.dumps(doc).encode())

    def write_availability(self, data: bytes | str) -> None:
        path = self.case / "supplier-availability.json"
        path.write_bytes(data if isinstance(data, bytes) else data.encode())


def _entry(doc: dict[str, Any], supplier_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(s for s in doc["suppliers"] if s["id"] == supplier_id)
    return entry


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as file:
        file.truncate(size)


def _cluster_env(**changes: str | None) -> dict[str, str]:
    env = {
        cluster_env.MODE: cluster_env.CLUSTER_MODE,
        cluster_env.BUCKET: "analyst-bucket",
        cluster_env.REGION: "us-west-2",
        cluster_env.MODEL_ID: "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        cluster_env.ROLE_NAME: "analyst-role",
        cluster_env.SUPPLIER_API_URL: "https://supplier-api.ns.svc.cluster.local:8443",
        cluster_env.SUPPLIER_API_ALIAS_URL: "https://alias.ns.svc.cluster.local:8443",
        cluster_env.SUPPLIER_KEY_FILE: "/opt/supplier-key/api-key",
        cluster_env.SUPPLIER_CA_FILE: "/opt/supplier-ca/ca.crt",
        cluster_env.POD_IDENTITY_URI: "http://169.254.170.23/v1/credentials",
        cluster_env.POD_IDENTITY_TOKEN_FILE: "/var/run/secrets/pods.eks.amazonaws.com/token",
    }
    for name, value in changes.items():
        if value is None:
            env.pop(name)
        else:
            env[name] = value
    return env


@dataclass(frozen=True)
class Row:
    name: str
    build: Callable[[Folder], list[str]]
    fragment: str
    code: int = 2


def case_row(name: str, edit: Callable[[Folder], object], fragment: str) -> Row:
    """A row whose only change is to the case folder."""

    def build(f: Folder) -> list[str]:
        edit(f)
        return f.argv()

    return Row(name, build, fragment)


def _symlink(link: Path, target: Path | str) -> None:
    link.unlink(missing_ok=True)
    link.symlink_to(target)


def _replace_with_dir(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _replace_with_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _long_int(digits: int) -> str:
    return "9" * digits


def _case_text(f: Folder, raw: str) -> None:
    (f.case / "case.json").write_text(raw)


def _sample_case_text(f: Folder, old: str, new: str) -> None:
    text = (f.case / "case.json").read_text()
    assert old in text
    (f.case / "case.json").write_text(text.replace(old, new, 1))


def _proposal_text(f: Folder, supplier_id: str, old: str, new: str) -> None:
    path = f.case / "proposals" / f"{supplier_id}.json"
    text = path.read_text()
    assert old in text
    f.write_proposal(supplier_id, text.replace(old, new, 1).encode())


def _claimed_by_a_live_run(f: Folder) -> list[str]:
    """Another run holds --out: its staging folder beside it is locked by a live process."""
    f.out.parent.mkdir(parents=True, exist_ok=True)
    staging = f.out.parent / f".{f.out.name}.partial-{'a' * 32}"
    staging.mkdir()
    fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _HELD.append(fd)
    return f.argv()


_HELD: list[int] = []


def _outside(f: Folder, path: Path) -> Path:
    f.outside.append(path)
    return path


CASE_ROWS = [
    # --- the folder and its files: inside it, regular, bounded -------------------------------
    case_row("case folder missing", lambda f: shutil.rmtree(f.case), "no such directory"),
    case_row(
        "case folder is a file",
        lambda f: (shutil.rmtree(f.case), f.case.write_text("{}")),
        "not a case folder (it is a file)",
    ),
    case_row("case.json missing", lambda f: (f.case / "case.json").unlink(), "case.json: missing"),
    case_row(
        "case.json is a folder",
        lambda f: _replace_with_dir(f.case / "case.json"),
        "case.json: is a folder, not a file",
    ),
    case_row(
        "case.json is a FIFO",
        lambda f: _replace_with_fifo(f.case / "case.json"),
        "case.json: is a FIFO, not a file",
    ),
    case_row(
        "case.json links outside",
        lambda f: _symlink(f.case / "case.json", "/etc/passwd"),
        "case.json: is a symbolic link; a case's files must lie inside its folder",
    ),
    case_row(
        "proposal links outside",
        lambda f: _symlink(f.case / "proposals" / "harbor.json", "/etc/passwd"),
        "harbor.json: is a symbolic link",
    ),
    case_row(
        "proposal links inside the folder",
        lambda f: _symlink(f.case / "proposals" / "harbor.json", "cedar.json"),
        "harbor.json: is a symbolic link",
    ),
    case_row(
        "proposals folder links elsewhere",
        lambda f: (
            shutil.copytree(f.case / "proposals", f.base / "elsewhere"),
            shutil.rmtree(f.case / "proposals"),
            _symlink(f.case / "proposals", f.base / "elsewhere"),
        ),
        "proposals: is a symbolic link",
    ),
    case_row(
        "proposal is a folder",
        lambda f: _replace_with_dir(f.case / "proposals" / "cedar.json"),
        "cedar.json: is a folder, not a file",
    ),
    case_row(
        "proposal is a FIFO",
        lambda f: _replace_with_fifo(f.case / "proposals" / "cedar.json"),
        "cedar.json: is a FIFO, not a file",
    ),
    case_row(
        "proposal missing",
        lambda f: (f.case / "proposals" / "cedar.json").unlink(),
        "cedar.json: missing",
    ),
    case_row(
        "case.json of 3 GiB",
        lambda f: _sparse(f.case / "case.json", 3 * GIB),
        f"case.json: {3 * GIB} bytes, more than the 262144 allowed",
    ),
    case_row(
        "proposal of 50 GiB",
        lambda f: _sparse(f.case / "proposals" / "harbor.json", 50 * GIB),
        f"harbor.json: {50 * GIB} bytes, more than the 262144 allowed",
    ),
    # --- JSON that is not strict ---------------------------------------------------------------
    case_row(
        "case.json not UTF-8",
        lambda f: (f.case / "case.json").write_bytes(b'{"case_id": "rfp-\xff01"}'),
        "case.json: not UTF-8 text (byte 17 is 0xff)",
    ),
    case_row(
        "case.json in UTF-16",
        lambda f: (f.case / "case.json").write_bytes('{"case_id": "x"}'.encode("utf-16")),
        "case.json: not UTF-8 text (byte 0 is 0xff)",
    ),
    case_row(
        "case.json with a byte order mark",
        lambda f: (f.case / "case.json").write_bytes(b"\xef\xbb\xbf{}"),
        "case.json: invalid JSON (Unexpected UTF-8 BOM",
    ),
    case_row(
        "case.json nested 100000 deep",
        lambda f: _case_text(f, _nested(100_000)),
        "case.json: nested more than 16 levels deep",
    ),
    case_row(
        "a field nested 20 deep",
        lambda f: f.edit_case(lambda d: d.update(notes=json.loads(_nested(20)))),
        "case.json: notes.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0: nested more than 16 levels deep",
    ),
    case_row(
        "price of 5000 digits",
        lambda f: _sample_case_text(
            f, '"max_price_usd": 125000', f'"max_price_usd": {_long_int(5000)}'
        ),
        "case.json: requirements.max_price_usd: an integer of 5000 digits; at most 15",
    ),
    case_row(
        "proposal price of 5000 digits",
        lambda f: _proposal_text(
            f, "cedar", '"price_usd": 130000', f'"price_usd": {_long_int(5000)}'
        ),
        "cedar.json: price_usd: an integer of 5000 digits",
    ),
    case_row(
        "NaN in case.json",
        lambda f: _sample_case_text(f, '"max_delivery_days": 30', '"max_delivery_days": NaN'),
        "requirements.max_delivery_days: NaN is not a number JSON allows",
    ),
    case_row(
        "Infinity in a proposal",
        lambda f: _proposal_text(f, "harbor", '"delivery_days": 45', '"delivery_days": -Infinity'),
        "harbor.json: delivery_days: -Infinity is not a number JSON allows",
    ),
    case_row(
        "a float too large to represent",
        lambda f: _sample_case_text(f, '"min_warranty_months": 24', '"min_warranty_months": 1e999'),
        "requirements.min_warranty_months: the number 1e999 is too large to represent",
    ),
    case_row(
        "duplicate case_id",
        lambda f: _sample_case_text(
            f, '"case_id": "rfp-001"', '"case_id": "rfp-001", "case_id": "x"'
        ),
        "case.json: the key case_id appears twice in one object",
    ),
    case_row(
        "invalid JSON",
        lambda f: _case_text(f, '{"case_id": "rfp-001",'),
        "case.json: invalid JSON (Expecting property name enclosed in double quotes at line 1",
    ),
    case_row("empty case.json", lambda f: _case_text(f, ""), "case.json: invalid JSON"),
    case_row(
        "case.json is a list",
        lambda f: _case_text(f, "[]"),
        "case.json: document: Input should be an object",
    ),
    # --- the case contract ---------------------------------------------------------------------
    case_row(
        "case id with a space",
        lambda f: f.edit_case(lambda d: d.update(case_id="Bad Id")),
        "case.json: case_id: String should match pattern",
    ),
    case_row(
        "case id climbing out",
        lambda f: f.edit_case(lambda d: d.update(case_id="../etc")),
        "case_id: String should match pattern",
    ),
    case_row(
        "case id of 64 characters",
        lambda f: f.edit_case(lambda d: d.update(case_id="a" * 64)),
        "case_id: String should match pattern",
    ),
    case_row(
        "supplier id in capitals",
        lambda f: f.edit_case(lambda d: d["suppliers"][0].update(id="NORTHSTAR")),
        "suppliers.0.id: String should match pattern",
    ),
    case_row(
        "supplier ids repeated",
        lambda f: f.edit_case(lambda d: d["suppliers"].append(d["suppliers"][0])),
        "supplier ids must be unique",
    ),
    case_row(
        "proposal path elsewhere",
        lambda f: f.edit_case(lambda d: d["suppliers"][1].update(proposal="../harbor.json")),
        "proposal must be 'proposals/harbor.json'",
    ),
    case_row(
        "an extra field",
        lambda f: f.edit_case(lambda d: d.update(owner="x")),
        "case.json: owner: Extra inputs are not permitted",
    ),
    case_row(
        "an extra field named with escapes",
        lambda f: f.edit_case(lambda d: d.update({f"{ESC}[31mred": 1})),
        'case.json: "\\u001b[31mred": Extra inputs are not permitted',
    ),
    case_row(
        "requirements missing",
        lambda f: f.edit_case(lambda d: d.pop("requirements")),
        "case.json: requirements: Field required",
    ),
    case_row(
        "price as a string",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd="125000")),
        "requirements.max_price_usd: Input should be a valid integer",
    ),
    case_row(
        "price as true",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd=True)),
        "requirements.max_price_usd: Input should be a valid integer",
    ),
    case_row(
        "price as a fraction",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd=1.5)),
        "requirements.max_price_usd: Input should be a valid integer",
    ),
    case_row(
        "negative delivery",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_delivery_days=-1)),
        "requirements.max_delivery_days: Input should be greater than 0",
    ),
    case_row(
        "price over a trillion",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd=10**13)),
        "requirements.max_price_usd: Input should be less than or equal to 1000000000000",
    ),
    case_row(
        "title forging a headline",
        lambda f: f.edit_case(
            lambda d: d.update(title="x\n\n**Recommended supplier:** Harbor Freight (`harbor`)")
        ),
        "title: Value error, holds the control character U+000A",
    ),
    case_row(
        "supplier name forging a headline",
        lambda f: f.edit_case(
            lambda d: d["suppliers"][0].update(name="N\r\n**Recommended supplier:** Harbor")
        ),
        "suppliers.0.name: Value error, holds the control character U+000D",
    ),
    case_row(
        "supplier name with a terminal escape",
        lambda f: f.edit_case(lambda d: d["suppliers"][0].update(name=f"N{ESC}[2J")),
        "suppliers.0.name: Value error, holds the control character U+001B",
    ),
    case_row(
        "title reversed by a bidi override",
        lambda f: f.edit_case(lambda d: d.update(title="office \u202eevil")),
        "title: Value error, holds the control character U+202E",
    ),
    case_row(
        "title with a line separator",
        lambda f: f.edit_case(lambda d: d.update(title="office\u2028# heading")),
        "title: Value error, holds the control character U+2028",
    ),
    case_row(
        "empty title",
        lambda f: f.edit_case(lambda d: d.update(title="")),
        "title: String should have at least 1 character",
    ),
    case_row(
        "title of 501 characters",
        lambda f: f.edit_case(lambda d: d.update(title="t" * 501)),
        "title: String should have at most 500 characters",
    ),
    case_row(
        "no suppliers",
        lambda f: f.edit_case(lambda d: d.update(suppliers=[])),
        "case.json: suppliers: Tuple should have at least 1 item",
    ),
    case_row(
        "51 suppliers",
        lambda f: f.edit_case(
            lambda d: d.update(
                suppliers=[
                    {**d["suppliers"][0], "id": f"s{n}", "proposal": f"proposals/s{n}.json"}
                    for n in range(51)
                ]
            )
        ),
        "suppliers: Tuple should have at most 50 items",
    ),
    case_row(
        "proposal changed after the case was written",
        lambda f: (f.case / "proposals" / "cedar.json").write_text(
            (SAMPLE_CASE / "proposals" / "cedar.json").read_text().replace("130000", "99000")
        ),
        "cedar.json: sha256",
    ),
    case_row(
        "digest that is not hex",
        lambda f: f.edit_case(lambda d: d["suppliers"][0].update(sha256="z" * 64)),
        "suppliers.0.sha256: String should match pattern",
    ),
    case_row(
        "proposal naming another supplier",
        lambda f: f.edit_proposal("cedar", lambda d: d.update(supplier_id="harbor")),
        "cedar.json: supplier_id 'harbor', expected 'cedar'",
    ),
    case_row(
        "summary of 4001 characters",
        lambda f: f.edit_proposal("cedar", lambda d: d.update(summary="s" * 4001)),
        "cedar.json: summary: String should have at most 4000 characters",
    ),
    case_row(
        "summary with a terminal escape",
        lambda f: f.edit_proposal("cedar", lambda d: d.update(summary=f"fine{ESC}]0;title\x07")),
        "cedar.json: summary: Value error, holds the control character U+001B",
    ),
    case_row(
        "proposal with an extra field",
        lambda f: f.edit_proposal("harbor", lambda d: d.update(discount=5)),
        "harbor.json: discount: Extra inputs are not permitted",
    ),
    # --- the optional availability file ------------------------------------------------------
    case_row(
        "availability is a list",
        lambda f: f.write_availability("[]"),
        "supplier-availability.json: must be an object mapping each supplier id",
    ),
    case_row(
        "availability misses a supplier",
        lambda f: f.write_availability('{"northstar": true, "harbor": true}'),
        "supplier-availability.json: cedar: missing",
    ),
    case_row(
        "availability names a stranger",
        lambda f: f.write_availability(
            '{"northstar": true, "harbor": true, "cedar": true, "acme": true}'
        ),
        "supplier-availability.json: acme: not a supplier of this case",
    ),
    case_row(
        "availability as a string",
        lambda f: f.write_availability('{"northstar": "true", "harbor": true, "cedar": true}'),
        "supplier-availability.json: northstar: must be true or false",
    ),
    case_row(
        "availability said twice",
        lambda f: f.write_availability(
            '{"northstar": true, "harbor": true, "cedar": true, "cedar": false}'
        ),
        "supplier-availability.json: the key cedar appears twice",
    ),
    case_row(
        "availability links outside",
        lambda f: _symlink(f.case / "supplier-availability.json", "/etc/hostname"),
        "supplier-availability.json: is a symbolic link",
    ),
    case_row(
        "availability link dangling",
        lambda f: _symlink(f.case / "supplier-availability.json", "/nonexistent"),
        "supplier-availability.json: is a symbolic link",
    ),
    case_row(
        "availability is a folder",
        lambda f: (f.case / "supplier-availability.json").mkdir(),
        "supplier-availability.json: is a folder, not a file",
    ),
]


def _out_row(name: str, prepare: Callable[[Folder], object], fragment: str) -> Row:
    def build(f: Folder) -> list[str]:
        prepare(f)
        return f.argv()

    return Row(name, build, fragment)


OPTION_ROWS = [
    # --- --out ---------------------------------------------------------------------------------
    _out_row(
        "--out not empty",
        lambda f: (f.out.mkdir(), (f.out / "old.md").write_text("x")),
        "is not empty; a run never mixes its files with others'",
    ),
    _out_row("--out is a file", lambda f: f.out.write_text("x"), "is a file, not a folder"),
    _out_row(
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
        lambda f: f.argv(out=_outside(f, Path("/proc/analyst-out"))),
        "cannot create a folder in /proc",
    ),
    Row(
        "--out inside /sys",
        lambda f: f.argv(out=_outside(f, Path("/sys/fs/analyst-out"))),
        "cannot create a folder in /sys/fs (Operation not permitted)",
    ),
    Row(
        "--out claimed by a run still going",
        _claimed_by_a_live_run,
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
        lambda f: f.argv(workdir=_outside(f, Path("/tmp/analyst-work"))),
        "lies in /tmp, which bubblewrap replaces in every tool process",
    ),
    Row(
        "--workdir in /usr under bubblewrap",
        lambda f: f.argv(workdir=_outside(f, Path("/usr/local/analyst"))),
        "lies in /usr, which bubblewrap shows to every tool process, the run's secrets with it",
    ),
    Row(
        "--workdir in /usr under nono",
        lambda f: f.argv(workdir=_outside(f, Path("/usr/local/analyst")), layer="nono"),
        "which nono's profiles let every tool process read",
    ),
    Row(
        "--workdir in /proc under bubblewrap",
        lambda f: f.argv(workdir=_outside(f, Path("/proc/analyst-work"))),
        "lies in /proc",
    ),
    Row(
        "--workdir a link into /tmp",
        lambda f: (
            f.work.symlink_to(_outside(f, Path(tempfile.mkdtemp(prefix="analyst-row-")))),
            f.argv(),
        )[1],
        "lies in /tmp",
    ),
    Row(
        "demo --workdir in /tmp, fine for nono but not bubblewrap",
        lambda f: f.argv(command="demo", workdir=_outside(f, Path("/tmp/analyst-demo"))),
        "lies in /tmp",
    ),
    # --- the command line and the cluster's settings -------------------------------------------
    Row("unknown layer", lambda f: f.argv(layer="docker"), "invalid choice: 'docker'"),
    Row("unknown option", lambda f: f.argv("--fast"), "unrecognized arguments: --fast"),
    Row("no layer", lambda f: ["run", "--case", str(f.case)], "--layer"),
    Row(
        "ANALYST_MODE misspelt",
        lambda f: (f.env.update(_cluster_env(ANALYST_MODE="clustr")), f.argv())[1],
        "ANALYST_MODE='clustr'",
    ),
    Row(
        "cluster bucket missing",
        lambda f: (f.env.update(_cluster_env(**{cluster_env.BUCKET: None})), f.argv())[1],
        f"{cluster_env.BUCKET} is not set",
    ),
    Row(
        "cluster supplier URL not https",
        lambda f: (
            f.env.update(_cluster_env(**{cluster_env.SUPPLIER_API_URL: "http://supplier:80"})),
            f.argv(),
        )[1],
        f"{cluster_env.SUPPLIER_API_URL}='http://supplier:80' is not an https://host[:port] URL",
    ),
]

ROWS = CASE_ROWS + OPTION_ROWS


def test_the_table_holds_at_least_sixty_distinct_rows() -> None:
    names = [row.name for row in ROWS]
    assert len(names) == len(set(names))
    assert len(ROWS) >= 60


@pytest.fixture
def folder() -> Iterator[Folder]:
    base = Path(tempfile.mkdtemp(prefix="analyst-input-", dir="/var/tmp"))
    case = base / "case"
    shutil.copytree(SAMPLE_CASE, case)
    made = Folder(base=base, case=case, work=base / "work", out=base / "out")
    yield made
    while _HELD:
        os.close(_HELD.pop())
    for path in made.outside:
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def tripwires(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing may start: no service, local or cluster, and no guardian."""

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("a row got as far as starting something")

    monkeypatch.setattr(LocalMode, "start", started)
    monkeypatch.setattr(ClusterMode, "start", started)
    monkeypatch.setattr(Guardian, "__enter__", started)


def _listing(base: Path) -> set[str]:
    found = set()
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            found.add(str(Path(root, name).relative_to(base)))
    return found


@pytest.mark.usefixtures("tripwires")
@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_hostile_input_is_refused_before_anything_exists(
    row: Row,
    folder: Folder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = row.build(folder)
    for name in [*cluster_env.__dict__.values()]:
        if isinstance(name, str) and name.startswith("ANALYST_"):
            monkeypatch.delenv(name, raising=False)
    for name, value in folder.env.items():
        monkeypatch.setenv(name, value)
    before = _listing(folder.base)
    with pytest.raises(SystemExit) as ended:
        code = cli.main(argv)
        raise SystemExit(code)
    stderr = capsys.readouterr().err
    assert ended.value.code == row.code, stderr
    assert row.fragment in stderr
    lines = stderr.strip().splitlines()
    if not row.name.startswith(("unknown", "no layer")):  # argparse prints its usage first
        assert len(lines) == 1 and lines[0].startswith("error (bad input): "), stderr
    assert ESC not in stderr and "\u202e" not in stderr, "input reached the terminal raw"
    assert _listing(folder.base) == before, "the row left something behind"
    for path in folder.outside:
        assert not path.exists() or (path.is_dir() and not any(path.iterdir())), path


def test_a_symlinked_proposal_never_has_its_target_digested(
    folder: Folder, tripwires: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The old way round printed the sha256 of whatever root could read: a way to learn a file's
    digest. The link is now refused before it is opened."""
    _symlink(folder.case / "proposals" / "cedar.json", "/etc/passwd")
    with pytest.raises(SystemExit) as ended:
        cli.main(folder.argv())
    assert ended.value.code == 2
    stderr = capsys.readouterr().err
    assert hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest() not in stderr
    assert "sha256" not in stderr
