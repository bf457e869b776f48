"""`doctor` here, and with each prerequisite taken away the way a machine or pod loses it.

Each removal is real and confined to the command: a PATH without bwrap; a stand-in
max_user_namespaces of 0 bound over the real one in a private mount namespace (the host's
sysctl is never written); the container runtime's masked /proc, simulated the same way; the
runtime's default seccomp profile and a filter that answers Landlock's syscalls with ENOSYS,
loaded into the command (rehearsal/runtime_seccomp.py); /dev/null bound over libseccomp and
over the interpreter; a closed work directory; a nono_py that fails to import. Where the same
piece stops a run, the run's one error names it too.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from app.controller.doctor import POD_CREDENTIALS
from app.core import cluster_env
from app.tools.bubblewrap.container_seccomp import container_seccomp_profile
from tests.support.cluster_settings import cluster_environment
from tests.support.masked_proc import in_container_proc
from tests.support.pod_identity_agent import credentials_body, pod_identity_agent
from tests.support.stack_run import REPO_ROOT

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="the removals need root in a mount namespace"),
]

RUNTIME_SECCOMP = REPO_ROOT / "rehearsal" / "runtime_seccomp.py"
DOCTOR = [sys.executable, "-m", "app.controller", "doctor"]
RUN_BUBBLEWRAP = [sys.executable, "-m", "app.controller", "run", "--layer", "bubblewrap"]
LIBSECCOMP_FILE = "/usr/lib/x86_64-linux-gnu/libseccomp.so.2.5.4"


def _env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ANALYST_"))}
    env.update(changes)
    return env


def _run(
    command: Sequence[str], env: Mapping[str, str] | None = None, timeout: int = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(command),
        cwd=REPO_ROOT,
        env=dict(env or _env()),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _lines(completed: subprocess.CompletedProcess[str], prefix: str) -> list[str]:
    return [line for line in completed.stdout.splitlines() if line.startswith(prefix)]


def _in_mount_namespace(script: str, command: Sequence[str]) -> list[str]:
    """``command`` after ``script`` in a private mount namespace of its own."""
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-ec"]
    return [*wrapper, script + '\nexec "$@"', "sh", *command]


@pytest.fixture
def out_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="doctor-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_every_prerequisite_holds_here_and_doctor_exits_0() -> None:
    completed = _run(DOCTOR)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert _lines(completed, "FAIL ") == [] and _lines(completed, "SKIP ") == []
    assert len(_lines(completed, "PASS ")) == 13 + 7
    assert "bubblewrap can run here: all 13 prerequisites hold" in completed.stdout
    assert "nono can run here: all 7 prerequisites hold" in completed.stdout


def test_without_bwrap_on_path_doctor_and_preflight_name_it(out_dir: Path) -> None:
    env = _env(PATH="/nonexistent")
    completed = _run([*DOCTOR, "--layer", "bubblewrap"], env)
    assert completed.returncode == 3
    assert _lines(completed, "FAIL ") == ["FAIL bwrap is on PATH: bwrap not found on PATH"]
    assert "     fix: apt-get install bubblewrap" in completed.stdout
    # What needs bwrap is not checked, and says so; the rest is still checked.
    skipped = _lines(completed, "SKIP ")
    assert len(skipped) == 4 and all('it needs "bwrap is on PATH"' in s for s in skipped)
    assert len(_lines(completed, "PASS ")) == 8
    ran = _run([*RUN_BUBBLEWRAP, "--workdir", str(out_dir / "w"), "--out", str(out_dir / "o")], env)
    assert ran.returncode == 3
    assert ran.stderr.strip().splitlines()[-1] == (
        "error (layer unavailable): bwrap not found on PATH; apt-get install bubblewrap"
    )


def test_a_zero_user_namespace_limit_is_named_by_doctor_and_preflight(out_dir: Path) -> None:
    stand_in = out_dir / "max_user_namespaces"
    stand_in.write_text("0\n")
    bind = f"mount --bind {stand_in} /proc/sys/user/max_user_namespaces"
    completed = _run(_in_mount_namespace(bind, [*DOCTOR, "--layer", "bubblewrap"]))
    assert completed.returncode == 3
    assert _lines(completed, "FAIL ") == [
        "FAIL the kernel lets an unprivileged process create user namespaces: user namespaces "
        "are disabled (/proc/sys/user/max_user_namespaces is 0)"
    ]
    assert [line.split(":")[0] for line in _lines(completed, "SKIP ")] == [
        "SKIP bwrap makes the tool's user, pid, network, IPC and UTS namespaces",
        "SKIP bwrap mounts a procfs for the tool's pid namespace",
    ]
    run = [*RUN_BUBBLEWRAP, "--workdir", str(out_dir / "w"), "--out", str(out_dir / "o")]
    ran = _run(_in_mount_namespace(bind, run))
    assert ran.returncode == 3
    assert (
        ran.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error (layer unavailable): user namespaces are disabled "
            "(/proc/sys/user/max_user_namespaces is 0); sysctl -w user.max_user_namespaces=128"
        )
    )
    # The stand-in lived in the command's mount namespace only.
    assert Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"


def test_a_masked_proc_is_named_with_bwraps_own_words(out_dir: Path) -> None:
    completed = _run(in_container_proc([*DOCTOR, "--layer", "bubblewrap"], masked=True))
    assert completed.returncode == 3
    assert _lines(completed, "FAIL ") == [
        "FAIL bwrap mounts a procfs for the tool's pid namespace: bwrap cannot mount a procfs "
        "for the tool's pid namespace; its own words: bwrap: Can't mount proc on "
        "/newroot/proc: Operation not permitted"
    ]
    assert "fix: in Kubernetes: procMount: Unmasked with hostUsers: false" in completed.stdout
    run = [*RUN_BUBBLEWRAP, "--workdir", str(out_dir / "w"), "--out", str(out_dir / "o")]
    ran = _run(in_container_proc(run, masked=True))
    assert ran.returncode == 3
    assert "bwrap: Can't mount proc on /newroot/proc: Operation not permitted" in ran.stderr
    unmasked = _run(in_container_proc([*DOCTOR, "--layer", "bubblewrap"], masked=False))
    assert unmasked.returncode == 0, unmasked.stdout


def _under_profile(profile: dict[str, object], command: Sequence[str], base: Path) -> list[str]:
    path = base / "profile.json"
    path.write_text(json.dumps(profile))
    return [sys.executable, str(RUNTIME_SECCOMP), "--no-new-privs", str(path), "--", *command]


def test_the_runtime_default_seccomp_profile_is_named_and_the_projects_passes(
    out_dir: Path,
) -> None:
    runtime_default = container_seccomp_profile(())
    doctor = [*DOCTOR, "--layer", "bubblewrap"]
    completed = _run(_under_profile(runtime_default, doctor, out_dir))
    assert completed.returncode == 3
    assert _lines(completed, "FAIL ") == [
        "FAIL bwrap makes the tool's user, pid, network, IPC and UTS namespaces: bwrap cannot "
        "make the tool's namespaces here; its own words: bwrap: No permissions to create new "
        "namespace, likely because the kernel does not allow non-privileged user namespaces. "
        "See <https://deb.li/bubblewrap> or <file:///usr/share/doc/bubblewrap/README.Debian.gz>."
    ]
    assert "policies/bubblewrap/container-seccomp.json" in completed.stdout
    allowed = _run(_under_profile(container_seccomp_profile(), doctor, out_dir))
    assert allowed.returncode == 0, allowed.stdout


def test_without_libseccomp_doctor_names_it() -> None:
    assert Path(LIBSECCOMP_FILE).exists()
    bind = f"mount --bind /dev/null {LIBSECCOMP_FILE}"
    completed = _run(_in_mount_namespace(bind, [*DOCTOR, "--layer", "bubblewrap"]))
    assert completed.returncode == 3
    (fail,) = _lines(completed, "FAIL ")
    assert fail.startswith(
        "FAIL libseccomp (libseccomp.so.2) loads: libseccomp.so.2 cannot be loaded:"
    )
    assert "     fix: apt-get install libseccomp2" in completed.stdout


def test_without_the_system_interpreter_both_layers_name_it() -> None:
    bind = "mount --bind /dev/null /usr/bin/python3"
    completed = _run(_in_mount_namespace(bind, DOCTOR))
    assert completed.returncode == 3
    claim = "the system interpreter the tool worker runs on is there"
    fails = _lines(completed, "FAIL ")
    assert len(fails) == 2 and all(f.startswith(f"FAIL {claim}") for f in fails)
    assert all("/usr/bin/python3 is missing or not executable" in f for f in fails)


def test_a_work_directory_closed_to_the_tool_uid_is_named(out_dir: Path) -> None:
    closed = out_dir / "closed"
    closed.mkdir(mode=0o700)
    completed = _run([*DOCTOR, "--workdir", str(closed / "analyst")])
    assert completed.returncode == 3
    fails = _lines(completed, "FAIL ")
    assert len(fails) == 2
    assert all(f"{closed} (drwx------) is closed to the tool uid 1000" in f for f in fails)


def test_a_nono_py_that_does_not_import_is_named(out_dir: Path) -> None:
    shadow = out_dir / "shadow"
    shadow.mkdir()
    # A stand-in for a missing package: a module of that name that refuses to import.
    (shadow / "nono_py.py").write_text("raise ImportError('nono_py is not installed here')\n")
    completed = _run([*DOCTOR, "--layer", "nono"], _env(PYTHONPATH=str(shadow)))
    assert completed.returncode == 3
    assert _lines(completed, "FAIL ") == [
        "FAIL nono-py imports: nono-py cannot be imported (nono_py is not installed here)"
    ]
    assert len(_lines(completed, "SKIP ")) == 2


def test_landlock_answering_enosys_is_named(out_dir: Path) -> None:
    no_landlock = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [
            {
                "names": ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"],
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": 38,
            }
        ],
    }
    completed = _run(_under_profile(no_landlock, [*DOCTOR, "--layer", "nono"], out_dir))
    assert completed.returncode == 3
    assert _lines(completed, "FAIL ") == [
        "FAIL nono can sandbox here: the kernel has Landlock: nono cannot sandbox here: Landlock "
        "not available. Requires Linux kernel 5.13+ with Landlock enabled."
    ]


def test_in_cluster_mode_without_pod_identity_or_settings_doctor_names_them(out_dir: Path) -> None:
    # This machine has no pod volume at /var/lib/analyst: a work directory of the test's own.
    completed = _run(
        [*DOCTOR, "--layer", "nono", "--workdir", str(out_dir / "w")], _env(ANALYST_MODE="cluster")
    )
    assert completed.returncode == 3
    fails = _lines(completed, "FAIL ")
    assert (
        "FAIL AWS_CONTAINER_CREDENTIALS_FULL_URI is the Pod Identity credential URI: "
        "AWS_CONTAINER_CREDENTIALS_FULL_URI is not set"
    ) in fails
    assert "     fix: EKS Pod Identity sets it: create the association for the analyst " in (
        completed.stdout
    )
    assert "FAIL ANALYST_BUCKET is an S3 bucket name: ANALYST_BUCKET is not set" in fails
    # Every variable but the optional ones (the rehearsal switch, the denied destinations);
    # then what needs the credential URI and token or the supplier's URL.
    assert len(fails) == 10
    assert len(_lines(completed, "SKIP ")) == 3
    assert "nono cannot run here" in completed.stdout


def _cluster_env(directory: Path, supplier_url: str, agent: str) -> dict[str, str]:
    changes = {cluster_env.SUPPLIER_API_URL: supplier_url, cluster_env.POD_IDENTITY_URI: agent}
    return _env(**cluster_environment(directory, **changes))


def test_in_cluster_mode_the_supplier_service_must_resolve_and_answer(out_dir: Path) -> None:
    with pod_identity_agent(200, credentials_body()) as agent:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            answering = _run(
                [*DOCTOR, "--layer", "nono", "--workdir", str(out_dir / "w")],
                _cluster_env(out_dir, f"https://127.0.0.1:{port}", agent),
            )
        unknown = _run(
            [*DOCTOR, "--layer", "nono", "--workdir", str(out_dir / "w")],
            _cluster_env(out_dir, "https://supplier-api.invalid:8443", agent),
        )
    assert answering.returncode == 0, answering.stdout
    assert "PASS the supplier Service accepts connections: 127.0.0.1:" in answering.stdout
    assert f"PASS {POD_CREDENTIALS}: {agent} gave credentials for the pod's role" in (
        answering.stdout
    )
    # The token's bytes are never printed, nor the credentials the agent gave.
    assert "eyJhbGciOi" not in answering.stdout
    assert "not-a-real" not in answering.stdout
    assert unknown.returncode == 3
    (fail,) = _lines(unknown, "FAIL ")
    assert fail.startswith("FAIL the supplier Service's name resolves: supplier-api.invalid does")
    assert _lines(unknown, "SKIP ") == [
        'SKIP the supplier Service accepts connections: not checked, it needs "the supplier '
        "Service's name resolves\""
    ]
