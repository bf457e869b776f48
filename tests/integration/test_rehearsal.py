"""`python -m rehearsal`: both layers' pods pass as rendered, under either runtime target and
with the control case renamed, each container under the seccomp profile its runtime would load;
and each pod spec broken on purpose makes the rehearsal fail with a message that names the
field, found by running it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.core.repo import REPO_ROOT

pytestmark = pytest.mark.integration

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
        "PASS rehearsal: its checks.json passes the cluster-mode checks identity.credentials, "
        "identity.caller, files.aws-credential.reader, files.aws-credential.evaluator, "
        "files.aws-credential.writer, files.aws-credential.control, cluster.supplier-name, "
        "cluster.secret-file-mode, the credentials from EKS Pod Identity",
        "PASS rehearsal: its evidence.json names the image the pod ran, "
        "rehearsal/analyst:checkout, as the code revision report.html shows",
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
        "gives it, 0440, owned by root and a group of the controller's (the pod's fsGroup), so "
        "no other user can read it (-r--r----- (0440) owned 0:1000",
        "PASS the controller reaches the supplier API by its Service's cluster DNS name "
        "supplier-api.procurement-analyst-dev.svc.cluster.local over TLS verified against the "
        "run's CA, whose certificate carries that name (10.96.0.11:8443,",
        "has no route to the supplier's 10.96.0.11:8443, which the controller reaches: ENETUNREACH",
        # The pod's egress, bounded by its policy applied with nftables.
        "PASS rehearsal: before the rules, sqs.us-west-2.amazonaws.com:443 (here 198.51.100.1, a "
        "listener of the rehearsal) accepts a connection: only the rules can refuse it",
        "PASS control: the controller connects to the supplier API's Service (10.96.0.11:8443)",
        # Names resolve through the cluster resolver, which the policy's DNS rule lets them reach.
        "nft: ip daddr { 10.96.0.10/32 } udp dport 53 accept",
        "PASS rehearsal: under the rules, the cluster resolver 10.96.0.10:53 answers "
        "supplier-api.procurement-analyst-dev.svc.cluster.local over UDP and TCP",
        "PASS rehearsal: the Job resolved supplier-api.procurement-analyst-dev.svc.cluster.local, "
        "sqs.us-west-2.amazonaws.com through the cluster resolver",
        "PASS so the controller cannot reach sqs.us-west-2.amazonaws.com:443, which no rule "
        "names (no answer within 3 s",
        "PASS so the controller cannot reach 1.1.1.1:443, which no rule names (no answer",
        "PASS rehearsal: the Job's egress check passed under the policy's rules: "
        "egress.control.sts, egress.control.supplier reached, "
        "egress.refused.sqs.us-west-2.amazonaws.com-443, egress.refused.1.1.1.1-443 refused",
        # Each container's seccomp profile, as containerd chooses it, and what the controller saw.
        "seccomp of spec.template.spec.containers[0]: none: a privileged container gets no "
        "profile from containerd",
        "seccomp of spec.template.spec.containers[0]: RuntimeDefault (spec.template.spec."
        "containers[0].securityContext.seccompProfile): containerd's default profile, loaded "
        "before the command runs",
        "PASS rehearsal: the Job's 2 filter counts each count in the 0 filters the controller "
        "holds from its container's profile (none)",
        "PASS rehearsal: the Job's 2 filter counts each count in the 1 filter the controller "
        "holds from its container's profile (RuntimeDefault)",
        "PASS it runs under 2 seccomp filters of its own, nono's and the baseline it installed "
        "before reading its arguments, over the 1 the controller itself runs under (its "
        "container's profile) (Seccomp 2, Seccomp_filters 3)",
    ):
        assert claim in out, claim
    assert out.count("ANALYST_COMPLETE=") == 2
    assert "seccompProfile=" not in out  # applied, so never listed as not simulated


def test_the_hardened_container_shape_passes_under_its_localhost_profile() -> None:
    done = _rehearse(
        "run", "--layer", "bubblewrap", "--runtime-target", "hardened-container", "--no-comparison"
    )
    assert done.returncode == 0
    out = done.stdout
    assert "\nFAIL " not in out and "FAIL rehearsal" not in out
    for claim in (
        "(hardened-container pods, case rfp-001)",
        "PASS rehearsal: SeccompProfile procurement-analyst-dev-bwrap carries the committed "
        "policies/bubblewrap/container-seccomp.json byte for byte",
        "seccomp of spec.template.spec.containers[0]: Localhost (spec.template.spec."
        "securityContext.seccompProfile): /var/lib/kubelet/seccomp/operator/"
        "procurement-analyst-dev-bwrap.json, the spec of SeccompProfile "
        "procurement-analyst-dev-bwrap",
        "not simulated: spec.template.spec.hostUsers=False: no user namespace for the pod",
        "PASS the controller runs as uid 1000, gid 1000 and holds no capability it could use "
        "(CapInh 0000000000000000, CapPrm 0000000000000000, CapEff 0000000000000000, CapBnd "
        "0000000000000000, CapAmb 0000000000000000; its other readings: NoNewPrivs 1, Seccomp 2)",
        "PASS the reader runs under exactly one seccomp filter of its own, the baseline this "
        "controller compiled, over the 1 the controller itself runs under (its container's "
        "profile) (Seccomp 2, Seccomp_filters 2)",
        "PASS rehearsal: the bubblewrap Job's pod analyst-bubblewrap-",
        "PASS rehearsal: the Job's 2 filter counts each count in the 1 filter the controller "
        "holds from its container's profile (Localhost)",
    ):
        assert claim in out, claim
    # No sandbox here: no RuntimeClass, no init container, the node's own userns setting.
    assert "runtimeClassName" not in out and "raise-userns-limit" not in out
    assert out.count("ANALYST_COMPLETE=") == 1


def test_a_stack_whose_case_is_the_control_template_serves_the_control_under_its_new_id() -> None:
    done = _rehearse("run", "--layer", "nono", "--case-id", "rfp-other", "--no-comparison")
    assert done.returncode == 0
    for claim in (
        "(isolated-sandbox pods, case rfp-other)",
        "PASS IAM returns AccessDenied for reading another case's object",
        "PASS control: the supplier API accepts GET /cases/rfp-other-2/suppliers from the "
        "controller with the real key, outside any profile: 200",
        "PASS writer: GET /cases/rfp-other-2/suppliers through its proxy returns 403",
        "PASS rehearsal: the report landed in the store: s3://procurement-analyst-rehearsal/"
        "reports/rfp-other/",
    ):
        assert claim in done.stdout, claim


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


def test_a_hardened_profile_without_pivot_root_fails_naming_the_seccomp_field() -> None:
    # The SeccompProfile object as a plausible slip would leave it: one widening short.
    done = _rehearse(
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
    done = _rehearse("run", "--layer", "nono", "--change", "tests.support.nothing:here")
    assert done.returncode == 2
    assert "error (bad input): --change tests.support.nothing:here" in done.stderr


def test_an_egress_policy_that_lets_https_out_fails_the_jobs_check() -> None:
    # Every element of the policy is watched: a rule for 0.0.0.0/0 on 443 lets the probe in.
    done = _rehearse(
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
    # supplier. The passing run above is the control.
    done = _rehearse(
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
