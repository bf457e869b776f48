"""`python -m rehearsal`: both layers' pods pass as rendered, under either runtime target and
with the control case renamed, each container under the seccomp profile its runtime would load;
and each pod spec broken on purpose makes the rehearsal fail with a message that names the
field, found by running it: test_rehearsal_breaks.py (two files, so that two test workers share
the rehearsals)."""

from __future__ import annotations

import pytest

from tests.support.rehearse import rehearse

pytestmark = pytest.mark.integration


def test_both_layers_pass_with_the_pods_real_security_contexts() -> None:
    done = rehearse("all")
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
    done = rehearse(
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
    done = rehearse("run", "--layer", "nono", "--case-id", "rfp-other", "--no-comparison")
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
