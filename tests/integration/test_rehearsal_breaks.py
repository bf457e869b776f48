"""`python -m rehearsal` with the pod spec, the SeccompProfile or the egress policy broken on
purpose: the rehearsal fails with a message that names the field, found by running it. The
passing rehearsals these are measured against are test_rehearsal.py's."""

from __future__ import annotations

import pytest

from tests.support.rehearse import rehearse

pytestmark = pytest.mark.integration


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
            "FAIL rehearsal: the failure comes from spec.template.spec.containers[0].env[2].name "
            "is 'ANALYST_BUKET': the controller reads ANALYST_BUCKET",
        ),
    ],
)
def test_a_broken_pod_spec_fails_naming_the_field(layer: str, change: str, field: str) -> None:
    done = rehearse(
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


def test_a_hardened_profile_without_pivot_root_fails_naming_the_seccomp_field() -> None:
    # The SeccompProfile object as a plausible slip would leave it: one widening short.
    done = rehearse(
        "run",
        "--layer",
        "bubblewrap",
        "--runtime-target",
        "hardened-container",
        "--no-comparison",
        "--change",
        "tests.support.rehearsal_changes:profile_without_pivot_root",
    )
    assert done.returncode == 1
    lines = [line for line in done.stdout.splitlines() if line.startswith("FAIL rehearsal")]
    assert lines[0] == (
        "FAIL rehearsal: SeccompProfile procurement-analyst-dev-bwrap carries the committed "
        "policies/bubblewrap/container-seccomp.json byte for byte (sha256 "
        + lines[0].split("(sha256 ")[1].split(")")[0]
        + "), written to /var/lib/kubelet/seccomp/operator/procurement-analyst-dev-bwrap.json "
        "(its spec differs from the committed file: it names no pivot_root)"
    )
    assert lines[-1].startswith(
        "FAIL rehearsal: the failure comes from spec.template.spec.securityContext."
        "seccompProfile: the Localhost profile spec.template.spec.containers[0] gets "
        "(/var/lib/kubelet/seccomp/operator/procurement-analyst-dev-bwrap.json, the spec of "
        "SeccompProfile procurement-analyst-dev-bwrap (sha256 "
    )
    assert lines[-1].endswith(
        "does not allow pivot_root, which bwrap needs for making the new tmpfs the tool's root; "
        "bwrap stopped with 'bwrap: pivot_root: Operation not permitted'"
    )
    assert "ANALYST_COMPLETE=" not in done.stdout


def test_an_unknown_change_is_bad_input_before_anything_starts() -> None:
    done = rehearse("run", "--layer", "nono", "--change", "tests.support.nothing:here")
    assert done.returncode == 2
    assert "error (bad input): --change tests.support.nothing:here" in done.stderr


def test_an_egress_policy_that_lets_https_out_fails_the_jobs_check() -> None:
    # Every element of the policy is watched: a rule for 0.0.0.0/0 on 443 lets the probe in.
    done = rehearse(
        "run", "--layer", "nono", "--no-comparison",
        "--change", "tests.support.rehearsal_changes:open_https_egress",
    )  # fmt: skip
    assert done.returncode == 1
    assert "FAIL so the controller cannot reach sqs.us-west-2.amazonaws.com:443" in done.stdout
    assert "(connected)" in done.stdout


def test_an_egress_policy_without_its_dns_rule_fails_the_rehearsal() -> None:
    # The analyst pods resolve every name through the cluster resolver (on EKS Auto Mode, served
    # on the node: https://github.com/aws/containers-roadmap/issues/2552), so the policy's DNS
    # rule is watched: without it the resolver is unreachable and the Job cannot name the
    # supplier. The passing rehearsals of test_rehearsal.py are the control.
    done = rehearse(
        "run", "--layer", "nono", "--no-comparison",
        "--change", "tests.support.rehearsal_changes:drop_dns_egress",
    )  # fmt: skip
    assert done.returncode == 1
    out = done.stdout
    assert "nft: ip daddr { 10.96.0.10/32 }" not in out
    assert (
        "FAIL rehearsal: under the rules, the cluster resolver 10.96.0.10:53 answers "
        "supplier-api.procurement-analyst-dev.svc.cluster.local over UDP and TCP"
    ) in out
    assert "(udp: no answer, tcp: no answer)" in out
    assert (
        "cannot resolve the supplier API host "
        "supplier-api.procurement-analyst-dev.svc.cluster.local"
    ) in out
