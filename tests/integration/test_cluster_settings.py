"""Cluster-mode settings a run cannot use, run black-box through `python -m app.controller`.

Each once ended in a traceback (exit 1), or was found only after the work directory existed;
now `run` refuses it before anything exists (exit 2, one line naming the variable and what it
accepts), and `doctor` in the same pod fails that variable in the same words, where it once
crashed or said rc 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.controller.doctor import POD_CREDENTIALS
from app.core import cluster_env
from app.core.cluster_settings import VARIABLES
from tests.support.cluster_settings import cluster_environment
from tests.support.entry_points import clean_env, controller, doctor_fail, listing, the_one_line
from tests.support.faults import processes_of, settle
from tests.support.pod_identity_agent import REFUSAL, pod_identity_agent

pytestmark = pytest.mark.integration

URL = cluster_env.SUPPLIER_API_URL
CA = cluster_env.SUPPLIER_CA_FILE
KEY = cluster_env.SUPPLIER_KEY_FILE
TOKEN = cluster_env.POD_IDENTITY_TOKEN_FILE
AGENT = cluster_env.POD_IDENTITY_URI
CLAIMS = {variable.name: f"{variable.name} is {variable.what}" for variable in VARIABLES}


def _file(work_base: Path, name: str, data: bytes) -> str:
    (work_base / name).write_bytes(data)
    return str(work_base / name)


CASES: list[tuple[str, Callable[[Path], str], str]] = [
    (URL, lambda p: "https://localhost:abc", "is not a URL (Port could not be cast to integer"),
    (URL, lambda p: "https://localhost:99999", "is not a URL (Port out of range 0-65535)"),
    (URL, lambda p: "https://[::1", "is not a URL (Invalid IPv6 URL)"),
    (URL, lambda p: "https://local\nhost:8443", "holds whitespace or a control character"),
    (AGENT, lambda p: " http://169.254.170.23/v1/credentials", "holds whitespace or a control"),
    (CA, lambda p: str(p / "missing.crt"), "cannot be read (No such file or directory)"),
    (CA, lambda p: _file(p, "ca.txt", b"no PEM here\n"), "holds no PEM certificate"),
    (TOKEN, lambda p: str(p / "missing"), "cannot be read (No such file or directory)"),
    (TOKEN, lambda p: str(p), "is not a regular file"),
    (TOKEN, lambda p: _file(p, "token-nl", b"eyJhbGciOi.a.b\n"), "ends in a newline"),
    (AGENT, lambda p: "http://10.0.0.1/v1/credentials", "is refused by botocore, which takes"),
    (AGENT, lambda p: "not-a-url", "is not a URL (its host is not a host name or an IP"),
    (cluster_env.REGION, lambda p: "not_a_region!", "is not an AWS Region name"),
    (KEY, lambda p: str(p / "missing-key"), "cannot be read (No such file or directory)"),
    (KEY, lambda p: "/dev/zero", "is not a regular file"),
    # Read once the checks reached the egress section, long after the tree existed (exit 2).
    (cluster_env.EGRESS_DENIED, lambda p: "203.0.113.9:443 maybe", "holds 'maybe', which is not"),
]


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    CASES,
    ids=[f"{name} {problem.split(' (')[0]}" for name, _, problem in CASES],
)
def test_an_unusable_cluster_setting_is_refused_before_anything_and_doctor_agrees(
    name: str, value: Callable[[Path], str], problem: str, work_base: Path
) -> None:
    files = work_base / "files"
    files.mkdir()
    given = value(files)
    # The supplier's name resolves here, so that doctor's one FAIL is the setting's.
    env = clean_env(**cluster_environment(files, **{URL: "https://localhost:8443", name: given}))
    before = listing(work_base)
    work, out = work_base / "work", work_base / "out"
    ran = controller("run", "--layer", "nono", "--workdir", str(work), "--out", str(out), env=env)
    assert ran.returncode == 2, ran.stderr
    line = the_one_line(ran)
    assert line.startswith(f"error (bad input): {name}={given!r}: {problem}"), line
    assert f"; {name} must be " in line
    # Nothing exists: not even the work directory's base, which a bad key file once left.
    assert listing(work_base) == before and not work.exists()
    checked = controller("doctor", "--layer", "nono", "--workdir", str(work), env=env)
    assert checked.returncode == 3, checked.stdout
    found, fix = doctor_fail(checked, CLAIMS[name])
    assert line == f"error (bad input): {found}; {fix}"
    assert "Traceback" not in checked.stdout + checked.stderr


def test_every_cluster_setting_passes_doctor_when_well_formed(work_base: Path) -> None:
    """The control: with every file real and every value well formed, doctor passes each
    variable (the supplier's address answering is another matter, and is not asked here)."""
    env = clean_env(**cluster_environment(work_base, **{URL: "https://localhost:8443"}))
    checked = controller("doctor", "--layer", "nono", "--workdir", str(work_base / "w"), env=env)
    for claim in CLAIMS.values():
        assert f"PASS {claim}: " in checked.stdout, checked.stdout
    assert "not-a-real-key" not in checked.stdout and "eyJhbGciOi" not in checked.stdout


@pytest.fixture
def refusing_agent() -> Iterator[str]:
    with pod_identity_agent(403, REFUSAL) as uri:
        yield uri


def test_an_agent_that_gives_no_credentials_stops_the_run_with_one_line(
    refusing_agent: str, work_base: Path
) -> None:
    """Every setting well formed, and the agent refuses (403): botocore's traceback once, exit
    1; now one line naming the agent and what the pod lacks, and nothing of the run left; and
    doctor, which once passed it, fails it in the same words."""
    files = work_base / "files"
    files.mkdir()
    env = clean_env(
        **cluster_environment(files, **{URL: "https://localhost:8443", AGENT: refusing_agent})
    )
    work, out = work_base / "work", work_base / "out"
    ran = controller("run", "--layer", "nono", "--workdir", str(work), "--out", str(out), env=env)
    assert ran.returncode == 1, ran.stderr
    line = the_one_line(ran)
    assert line.startswith(
        f"error (run stopped): the Pod Identity agent at {refusing_agent} gave no credentials "
        "(Error when retrieving credentials from container-role: Error retrieving metadata: "
        "Received non 200 response 403 from container metadata: "
    ), line
    assert line.endswith(
        "; the pod's service account needs a Pod Identity association with the analyst role, "
        "and its node the eks-pod-identity-agent add-on"
    ), line
    assert not out.exists()
    assert settle(lambda: processes_of(work)) == []
    assert settle(lambda: sorted(listing(work)) if work.exists() else []) == []
    checked = controller("doctor", "--layer", "nono", "--workdir", str(work), env=env)
    assert checked.returncode == 3, checked.stdout
    found, fix = doctor_fail(checked, POD_CREDENTIALS)
    assert line == f"error (run stopped): {found}; {fix}"
