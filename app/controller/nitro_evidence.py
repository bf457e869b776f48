"""`nitro-evidence`: reads, through the Kubernetes API, the guest readings the analyst Job's pod
and the ordinary comparison pod on its node printed, and sets them side by side.

It uses the official Kubernetes client with the kubeconfig the user already has (the stack's
cluster, `aws eks update-kubeconfig`), reads the pods, their logs and the node, and prints the
table and a verdict. "not isolated" and "inconclusive" exit 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.controller.guest import LINE_PREFIX, readings_in_log
from app.controller.guest_comparison import GuestComparison, PodReadings, Verdict, render
from app.core import cluster_env
from app.core.errors import BadInput, RunStopped, shown
from app.core.roles import Layer

MAX_LOG_BYTES = 1024 * 1024


class NoEvidence(RunStopped):
    """The pods or their readings are not there to compare; the message says which."""


@dataclass(frozen=True)
class Request:
    namespace: str
    layer: Layer
    kubeconfig: Path | None
    context: str | None


def _api(request: Request) -> Any:
    import yaml
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    remedy = "pass --kubeconfig, or run: aws eks update-kubeconfig --name <cluster>"
    source = shown(request.kubeconfig) if request.kubeconfig else "($KUBECONFIG, ~/.kube/config)"
    try:
        config.load_kube_config(
            config_file=str(request.kubeconfig) if request.kubeconfig else None,
            context=request.context,
        )
    except (ConfigException, OSError) as error:
        raise BadInput(f"cannot load a kubeconfig ({shown(str(error))})", remedy) from None
    except yaml.YAMLError as error:
        # Where, never what: the YAML error's own text quotes the file's line, which may hold
        # a token.
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise BadInput(f"the kubeconfig {source} is not valid YAML{where}", remedy) from None
    except (UnicodeDecodeError, TypeError, ValueError, KeyError, AttributeError) as error:
        # The client reads the document's shape as it goes: a list where a mapping belongs, a
        # number where a list does.
        raise BadInput(
            f"the kubeconfig {source} is not one the Kubernetes client can read "
            f"({type(error).__name__})",
            remedy,
        ) from None
    return client.CoreV1Api()


def _newest(pods: list[Any]) -> Any | None:
    started = [pod for pod in pods if pod.spec.node_name]
    return max(started, key=lambda pod: pod.metadata.creation_timestamp, default=None)


def _readings(api: Any, namespace: str, pod: Any) -> PodReadings:
    name = pod.metadata.name
    log = api.read_namespaced_pod_log(name, namespace, limit_bytes=MAX_LOG_BYTES)
    try:
        readings = readings_in_log(log)
    except (ValueError, KeyError) as error:
        raise NoEvidence(f"pod {name}: its readings line is malformed ({error})") from error
    if readings is None:
        raise NoEvidence(
            f"pod {name}: its log holds no {LINE_PREFIX} line yet",
            "wait until the pod has started, then run this again",
        )
    return PodReadings(name, pod.status.start_time, readings)


def compare_pods(request: Request, api: Any | None = None) -> GuestComparison:
    api = api or _api(request)
    layer = request.layer.value
    component, layer_label = cluster_env.COMPONENT_LABEL, cluster_env.LAYER_LABEL
    analysts = api.list_namespaced_pod(
        request.namespace,
        label_selector=f"{component}={cluster_env.ANALYST_COMPONENT},{layer_label}={layer}",
    ).items
    analyst = _newest(analysts)
    if analyst is None:
        raise NoEvidence(
            f"no scheduled {layer} analyst pod in namespace {request.namespace}",
            "check `pulumi stack output jobNames` and `kubectl get pods -n <namespace>`",
        )
    node = analyst.spec.node_name
    ordinary = _newest(
        [
            pod
            for pod in api.list_namespaced_pod(
                request.namespace,
                label_selector=f"{component}={cluster_env.COMPARISON_COMPONENT},"
                f"{layer_label}={layer}",
            ).items
            if pod.spec.node_name == node
        ]
    )
    if ordinary is None:
        raise NoEvidence(
            f"no ordinary comparison pod on node {node}, where {analyst.metadata.name} ran",
            "the stack creates one when its comparisonPod setting is on",
        )
    node_object = api.read_node(node)
    return GuestComparison(
        analyst=_readings(api, request.namespace, analyst),
        ordinary=_readings(api, request.namespace, ordinary),
        node=node,
        node_created_at=node_object.metadata.creation_timestamp,
        now=datetime.now(UTC),
    )


def nitro_evidence(request: Request) -> tuple[str, Verdict]:
    """The printed comparison and its verdict."""
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    remedy = "check the kubeconfig's context is the stack's cluster and that it is reachable"
    try:
        comparison = compare_pods(request)
    except ApiException as error:
        raise NoEvidence(
            f"the cluster's API answered {error.status} {shown(str(error.reason))}", remedy
        ) from None
    except HTTPError as error:
        reason = getattr(error, "reason", None) or error
        raise NoEvidence(
            f"cannot reach the cluster's API ({shown(type(reason).__name__)})", remedy
        ) from None
    return render(comparison), comparison.verdict()
