"""`python -m rehearsal`: both layers' pods pass as rendered, and each pod spec broken on purpose
makes the rehearsal fail with a message that names the field, found by running it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.core.repo import REPO_ROOT

TIMEOUT_SECONDS = 600


def _rehearse(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "rehearsal", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )
    print(done.stdout[-20000:], done.stderr[-4000:])
    return done


def test_both_layers_pass_with_the_pods_real_security_contexts() -> None:
    done = _rehearse("all")
    assert done.returncode == 0
    out = done.stdout
    assert "\nFAIL " not in out and "FAIL rehearsal" not in out
    for claim in (
        "PASS rehearsal: init container raise-userns-limit ran to completion first "
        "(spec.template.spec.initContainers[0]), as uid 0, privileged",
        "PASS rehearsal: the bubblewrap Job's pod analyst-bubblewrap-",
        "PASS rehearsal: the nono Job's pod analyst-nono-",
        "PASS rehearsal: its log holds the cluster-mode lines",
        "PASS rehearsal: the report landed in the store: s3://procurement-analyst-rehearsal/"
        "reports/rfp-001/",
        "PASS rehearsal: nitro-evidence says 'not isolated from the node'",
        "reads 128 (written by raise-userns-limit; it started at 0",
        "added by the rehearsal, not in the manifest: ANALYST_REHEARSAL=1",
        "not simulated: spec.template.spec.runtimeClassName=isolated-sandbox",
        "SKIP Bedrock returned a real turn with nonzero token usage — a rehearsal",
        # The cluster-mode lines themselves, as the Job prints them.
        "PASS the AWS SDK takes the controller's credentials from EKS Pod Identity",
        "PASS the evaluator cannot open the Pod Identity token file: it is not in that role's "
        "filesystem at all, not merely unreadable: ENOENT",
        "PASS the evaluator cannot open the Pod Identity token file: no Landlock rule of its "
        "profile grants it: EACCES",
        "PASS the supplier key Secret's file /opt/supplier-key/api-key has the mode the manifest "
        "gives it, 0440, owned root:1000",
        "PASS the controller reaches the supplier API by its Service's cluster DNS name "
        "supplier-api.procurement-analyst-dev.svc.cluster.local (10.96.0.10:8443)",
        "has no route to the supplier's 10.96.0.10:8443, which the controller reaches: ENETUNREACH",
    ):
        assert claim in out, claim
    assert out.count("ANALYST_COMPLETE=") == 2


@pytest.mark.parametrize(
    ("layer", "change", "field"),
    [
        (
            "nono",
            "drop_fs_group",
            "FAIL rehearsal: the failure comes from spec.template.spec.securityContext.fsGroup is "
            "not set, so the kubelet left the files of spec.template.spec.volumes[0] (Secret "
            "supplier-key) in group root",
        ),
        (
            "bubblewrap",
            "key_where_a_tool_can_reach",
            "FAIL rehearsal: the failure comes from spec.template.spec.containers[0]."
            "volumeMounts[0].mountPath puts Secret supplier-key at /usr/share/supplier-key",
        ),
        (
            "bubblewrap",
            "remove_init_container",
            "FAIL rehearsal: the failure comes from spec.template.spec.initContainers: no init "
            "container raised the sandbox guest's /proc/sys/user/max_user_namespaces at 0",
        ),
        (
            "nono",
            "misspell_bucket_variable",
            "FAIL rehearsal: the failure comes from spec.template.spec.containers[0].env[1].name "
            "is 'ANALYST_BUKET': the controller reads ANALYST_BUCKET",
        ),
    ],
)
def test_a_broken_pod_spec_fails_naming_the_field(layer: str, change: str, field: str) -> None:
    done = _rehearse(
        "run",
        "--layer",
        layer,
        "--no-comparison",
        "--change",
        f"tests.support.rehearsal_changes:{change}",
    )
    assert done.returncode == 1
    assert field in done.stdout
    assert "ANALYST_COMPLETE=" not in done.stdout


def test_an_unknown_change_is_bad_input_before_anything_starts() -> None:
    done = _rehearse("run", "--layer", "nono", "--change", "tests.support.nothing:here")
    assert done.returncode == 2
    assert "error (bad input): --change tests.support.nothing:here" in done.stderr
