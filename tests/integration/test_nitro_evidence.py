"""`nitro-evidence` against a real HTTP server speaking the Kubernetes API on loopback."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from app.core import cluster_env
from app.core.repo import REPO_ROOT
from tests.support.fake_kube import FakeCluster, serving
from tests.support.guest_readings import NODE, SANDBOX

pytestmark = pytest.mark.integration

NS = "analyst-ns"
NODE_NAME = "ip-10-0-3-17.us-west-2.compute.internal"
OTHER_NODE = "ip-10-0-9-80.us-west-2.compute.internal"


def _labels(component: str, layer: str = "bubblewrap") -> dict[str, str]:
    return {cluster_env.COMPONENT_LABEL: component, cluster_env.LAYER_LABEL: layer}


def _cluster(analyst_log: str, ordinary_log: str) -> FakeCluster:
    cluster = FakeCluster()
    cluster.add_node(NODE_NAME, "2026-11-30T08:31:00Z")
    cluster.add_node(OTHER_NODE, "2026-11-29T08:31:00Z")
    cluster.add_pod(
        "analyst-bubblewrap-1a2b3c-x7k2p", _labels(cluster_env.ANALYST_COMPONENT), NODE_NAME,
        "2026-11-30T10:00:58Z", f"==> bubblewrap: run r1, case rfp-001\n{analyst_log}\nPASS x\n",
    )  # fmt: skip
    # An older analyst pod of the same layer, and one of the other layer: neither is read.
    cluster.add_pod(
        "analyst-bubblewrap-old-aaaaa", _labels(cluster_env.ANALYST_COMPONENT), OTHER_NODE,
        "2026-11-29T10:00:00Z", NODE.line(),
    )  # fmt: skip
    cluster.add_pod(
        "analyst-nono-1a2b3c-zzzzz", _labels(cluster_env.ANALYST_COMPONENT, "nono"), OTHER_NODE,
        "2026-11-30T10:05:00Z", NODE.line(),
    )  # fmt: skip
    cluster.add_pod(
        "ordinary-comparison-bubblewrap-q9m4z", _labels(cluster_env.COMPARISON_COMPONENT),
        NODE_NAME, "2026-11-30T10:01:30Z", ordinary_log + "\n",
    )  # fmt: skip
    # A comparison pod on another node compares nothing and must not be picked.
    cluster.add_pod(
        "ordinary-comparison-bubblewrap-other", _labels(cluster_env.COMPARISON_COMPONENT),
        OTHER_NODE, "2026-11-30T10:03:30Z", SANDBOX.line(),
    )  # fmt: skip
    return cluster


def _command(kubeconfig: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.controller", "nitro-evidence", "--layer", "bubblewrap",
         "--namespace", NS, "--kubeconfig", str(kubeconfig), *extra],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_sandboxed_analyst_beside_its_node_is_isolated_exit_0(tmp_path: Path) -> None:
    cluster = _cluster(SANDBOX.line(), NODE.line())
    with serving(cluster, tmp_path) as kubeconfig:
        done = _command(kubeconfig)
    assert done.returncode == 0, done.stderr
    assert "sandboxed analyst (analyst-bubblewrap-1a2b3c-x7k2p)" in done.stdout
    assert "ordinary pod (ordinary-comparison-bubblewrap-q9m4z)" in done.stdout
    assert f"both pods on node {NODE_NAME}" in done.stdout
    assert "verdict: isolated" in done.stdout
    assert SANDBOX.kernel in done.stdout and NODE.kernel in done.stdout
    # The pods were chosen by label selector, and the node was read for its age.
    assert any("labelSelector=" in path for path in cluster.requests)
    assert f"/api/v1/nodes/{NODE_NAME}" in cluster.requests


def test_readings_that_are_the_nodes_own_are_not_isolated_exit_1(tmp_path: Path) -> None:
    same = replace(NODE, uptime_seconds=NODE.uptime_seconds + 0.4)
    with serving(_cluster(same.line(), NODE.line()), tmp_path) as kubeconfig:
        done = _command(kubeconfig)
    assert done.returncode == 1
    assert "verdict: not isolated from the node" in done.stdout


def test_a_missing_comparison_pod_is_named_exit_1(tmp_path: Path) -> None:
    cluster = _cluster(SANDBOX.line(), NODE.line())
    cluster.pods = [
        pod
        for pod in cluster.pods
        if pod["metadata"]["name"] != "ordinary-comparison-bubblewrap-q9m4z"
    ]
    with serving(cluster, tmp_path) as kubeconfig:
        done = _command(kubeconfig)
    assert done.returncode == 1
    assert f"no ordinary comparison pod on node {NODE_NAME}" in done.stderr


def test_a_log_without_readings_is_named_exit_1(tmp_path: Path) -> None:
    with serving(_cluster("PASS only checks", NODE.line()), tmp_path) as kubeconfig:
        done = _command(kubeconfig)
    assert done.returncode == 1
    assert "analyst-bubblewrap-1a2b3c-x7k2p: its log holds no GUEST_READINGS= line" in done.stderr


def test_no_kubeconfig_is_bad_input_exit_2(tmp_path: Path) -> None:
    done = _command(tmp_path / "missing-kubeconfig")
    assert done.returncode == 2
    assert "cannot load a kubeconfig" in done.stderr


@pytest.mark.parametrize("layer", ["docker"])
def test_an_unknown_layer_is_a_usage_error(layer: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "app.controller", "nitro-evidence", "--layer", layer,
         "--namespace", NS],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "invalid choice" in done.stderr
