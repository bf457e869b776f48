"""The rehearsal's container runtime and seccomp: which profile each container gets (containerd's
rules), the node's files as the Security Profiles Operator would write them, how a profile is
read for the diagnosis, and where the loader sits in a container's start (runc's order)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from app.core.roles import Layer
from app.tools.bubblewrap.container_seccomp import (
    BWRAP_WIDENINGS,
    container_seccomp_profile,
)
from infra.security_profiles import SECCOMP_POLICY
from rehearsal.container_init import LOADER_INTERPRETER, SETPRIV, command_line
from rehearsal.kubelet import ContainerRun
from rehearsal.objects import StackUnderRehearsal, render
from rehearsal.pods import PodResult
from rehearsal.seccomp_profiles import Node, SeccompChoice, allows, choose, prepare_node
from rehearsal.security import ConfigError, Privileges, not_simulated
from rehearsal.verdicts import Verdicts, filter_counts
from tests.support.rehearsal_changes import profile_without_pivot_root
from tests.support.widenings import widenings_without

HARDENED = {"runtimeTarget": "hardened-container"}
POD = "spec.template.spec"


def _spec(stack: StackUnderRehearsal, layer: Layer) -> dict[str, Any]:
    spec: dict[str, Any] = copy.deepcopy(stack.analyst_jobs[layer]["spec"]["template"]["spec"])
    return spec


def _choose(spec: dict[str, Any], node: Node, index: int = 0) -> Any:
    where = f"{POD}.containers[{index}]"
    return choose(spec, spec["containers"][index], pod_where=POD, where=where, node=node)


def test_the_hardened_bubblewrap_container_loads_the_committed_profile_from_the_operators_file(
    tmp_path: Path,
) -> None:
    stack = render(settings=HARDENED)
    node = prepare_node(tmp_path, stack.objects)
    choice = _choose(_spec(stack, Layer.BUBBLEWRAP), node)
    assert (choice.kind, choice.field) == ("Localhost", f"{POD}.securityContext.seccompProfile")
    assert choice.file == tmp_path / "kubelet-seccomp/operator/procurement-analyst-dev-bwrap.json"
    assert choice.file.read_bytes() == SECCOMP_POLICY.read_bytes()
    (installed,) = node.installed
    assert installed.committed_difference() == ""
    assert installed.node_path == (
        "/var/lib/kubelet/seccomp/operator/procurement-analyst-dev-bwrap.json"
    )


def test_runtime_default_is_containerds_default_and_the_containers_own_field_decides(
    tmp_path: Path,
) -> None:
    stack = render()
    node = prepare_node(tmp_path, stack.objects)
    choice = _choose(_spec(stack, Layer.NONO), node)
    assert choice.kind == "RuntimeDefault"
    assert choice.field == f"{POD}.containers[0].securityContext.seccompProfile"
    assert choice.profile() == container_seccomp_profile(())
    # Without its own field, the container takes the pod's.
    spec = _spec(stack, Layer.NONO)
    del spec["containers"][0]["securityContext"]["seccompProfile"]
    assert _choose(spec, node).field == f"{POD}.securityContext.seccompProfile"


def test_a_privileged_container_gets_no_profile_whatever_is_named(tmp_path: Path) -> None:
    stack = render()
    node = prepare_node(tmp_path, stack.objects)
    spec = _spec(stack, Layer.BUBBLEWRAP)
    spec["containers"][0]["securityContext"]["seccompProfile"] = {"type": "RuntimeDefault"}
    choice = _choose(spec, node)
    assert (choice.kind, choice.file) == ("none", None)
    assert "privileged" in choice.source


@pytest.mark.parametrize("named", [{"type": "Unconfined"}, None])
def test_unconfined_or_nothing_named_gets_no_profile(
    tmp_path: Path, named: dict[str, str] | None
) -> None:
    stack = render()
    node = prepare_node(tmp_path, stack.objects)
    spec = _spec(stack, Layer.NONO)
    del spec["containers"][0]["securityContext"]["seccompProfile"]
    spec["securityContext"].pop("seccompProfile")
    if named is not None:
        spec["securityContext"]["seccompProfile"] = named
    assert _choose(spec, node).file is None


def test_a_localhost_profile_no_object_installs_refuses_the_container_naming_the_field(
    tmp_path: Path,
) -> None:
    spec = _spec(render(settings=HARDENED), Layer.BUBBLEWRAP)
    bare = prepare_node(tmp_path, render().objects)  # the sandbox stack has no SeccompProfile
    with pytest.raises(ConfigError) as refused:
        _choose(spec, bare)
    assert str(refused.value).startswith(
        f"{POD}.securityContext.seccompProfile.localhostProfile: "
        "operator/procurement-analyst-dev-bwrap.json is not on the node"
    )


def test_a_localhost_name_cannot_leave_the_kubelets_seccomp_root(tmp_path: Path) -> None:
    stack = render(settings=HARDENED)
    node = prepare_node(tmp_path, stack.objects)
    spec = _spec(stack, Layer.BUBBLEWRAP)
    spec["securityContext"]["seccompProfile"]["localhostProfile"] = "../runtime-default.json"
    assert (tmp_path / "runtime-default.json").is_file()
    with pytest.raises(ConfigError, match="is not on the node"):
        _choose(spec, node)


def test_allows_reads_each_widening_from_the_profile_itself() -> None:
    committed = json.loads(SECCOMP_POLICY.read_text())
    assert all(allows(committed, w) for w in BWRAP_WIDENINGS)
    runtime_default = container_seccomp_profile(())
    assert not any(allows(runtime_default, w) for w in BWRAP_WIDENINGS)
    for widening in BWRAP_WIDENINGS:
        less = container_seccomp_profile(widenings_without(widening.syscall))
        refused = [w.syscall for w in BWRAP_WIDENINGS if not allows(less, w)]
        assert refused == [widening.syscall]
    # clone widened without one of the flags bwrap passes is refused as bwrap calls it.
    clone = next(w for w in BWRAP_WIDENINGS if w.syscall == "clone")
    assert not allows(container_seccomp_profile(widenings_without("clone", "CLONE_NEWPID")), clone)


def test_a_profile_object_that_differs_from_the_committed_file_is_named(tmp_path: Path) -> None:
    stack = render(profile_without_pivot_root, HARDENED)
    (installed,) = prepare_node(tmp_path, stack.objects).installed
    assert installed.committed_difference() == "it names no pivot_root"


def test_seccomp_profile_is_applied_so_no_longer_listed_as_not_simulated() -> None:
    for settings in ({}, HARDENED):
        stack = render(settings=settings)
        for job in stack.analyst_jobs.values():
            spec = job["spec"]["template"]["spec"]
            assert not [line for line in not_simulated(spec, POD) if "seccompProfile" in line]


def _plan(seccomp: dict[str, Any] | None) -> dict[str, Any]:
    return {"setpriv": ["--reuid", "1000"], "seccomp": seccomp, "argv": ["python", "-m", "x"]}


def test_the_loader_sits_where_runc_loads_the_profile() -> None:
    loader = [LOADER_INTERPRETER, "-I", "/proc/self/fd/5", "--close", "5", "--close", "6"]
    loader += ["/proc/self/fd/6", "--"]
    setpriv = [SETPRIV, "--reuid", "1000", "--"]
    argv = ["python", "-m", "x"]
    assert command_line(_plan(None), -1, -1) == [*setpriv, *argv]
    # With no_new_privs: after setpriv has dropped everything, just before the command.
    with_nnp = _plan({"profile": "p.json", "no_new_privs": True})
    assert command_line(with_nnp, 5, 6) == [*setpriv, *loader, *argv]
    # Without: while the capabilities the kernel then requires are still held.
    without = _plan({"profile": "p.json", "no_new_privs": False})
    assert command_line(without, 5, 6) == [*loader, *setpriv, *argv]


def _analyst_pod(choice: SeccompChoice, log: list[str]) -> PodResult:
    granted = Privileges(1000, 1000, (1000,), False, (), True, True, False)
    run = ContainerRun("analyst", "i", f"{POD}.containers[0]", granted, choice, {}, log, 0)
    return PodResult("analyst-x", "Job analyst", runs=[run], exit_code=0)


@pytest.mark.parametrize(
    ("profile", "suffix", "verdict"),
    [
        (
            Path("p.json"),
            ", over the 1 the controller itself runs under (its container's profile)",
            "PASS",
        ),
        (Path("p.json"), "", "FAIL"),  # a profile the runtime never loaded
        (None, "", "PASS"),
        (None, ", over the 1 the controller itself runs under (its container's profile)", "FAIL"),
    ],
)
def test_the_filter_counts_must_hold_exactly_what_the_container_got(
    profile: Path | None, suffix: str, verdict: str
) -> None:
    choice = SeccompChoice("Localhost" if profile else "none", "", profile, "")
    count = f"PASS the reader runs under one seccomp filter of its own{suffix}: Seccomp_filters 2"
    log = [count, "PASS something else"]
    verdicts = Verdicts(io.StringIO())
    filter_counts(_analyst_pod(choice, log), verdicts)
    (line,) = verdicts.lines
    assert line.startswith(f"{verdict} rehearsal: the Job's 1 filter counts each count in the")


def test_no_filter_count_at_all_fails() -> None:
    verdicts = Verdicts(io.StringIO())
    filter_counts(_analyst_pod(SeccompChoice("none", "", None, ""), ["PASS x"]), verdicts)
    assert verdicts.failed
