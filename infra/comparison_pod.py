"""The ordinary comparison pod: beside a layer's analyst pod, on the same node, outside the
sandbox RuntimeClass, printing the same guest readings (`nitro-evidence` sets them side by side)."""

from __future__ import annotations

from typing import Any

from app.core import cluster_env as env
from app.core.roles import Layer

from .pod_specs import (
    LAYER_LABEL,
    RUNTIME_DEFAULT,
    DeployValue,
    app_user,
    image_node_selector,
    layer_labels,
    no_privilege,
)

# The label the Job controller gives each pod of a Job: the Job's own name.
# https://kubernetes.io/docs/reference/labels-annotations-taints/#batchkubernetesiojob-name
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"

# The ordinary comparison pod only prints four readings; it needs little and never long.
COMPARISON_RESOURCES: dict[str, dict[str, str]] = {
    "requests": {"cpu": "50m", "memory": "64Mi"},
    "limits": {"cpu": "250m", "memory": "128Mi"},
}
# It must be scheduled while the analyst pod it follows is still on its node: a pod that has
# finished no longer attracts another by affinity. Past this it stops waiting.
COMPARISON_DEADLINE_SECONDS = 15 * 60


def comparison_job_spec(
    *,
    image: DeployValue,
    layer: Layer,
    analyst_job: DeployValue,
    tolerations: DeployValue,
) -> dict[str, Any]:
    """An ordinary pod beside the layer's analyst pod (the Job named `analyst_job`), on the same
    node, printing the same guest readings: the node's own kernel, uptime, disks and product
    name, for comparison.

    Fully hardened and outside the sandbox RuntimeClass, which is the point: it shows what a
    pod that is not isolated from the node reports there. Sandbox-capable nodes carry a taint
    that the RuntimeClass tolerates for its own pods only (its `scheduling.tolerations`); this
    pod gets the same tolerations, read from the RuntimeClass, or it could never be placed
    there. It names the analyst Job it follows, so a new analyst Job is a new comparison Job.
    """
    pod: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "restartPolicy": "Never",
        "nodeSelector": image_node_selector(),
        "securityContext": {**app_user(), "seccompProfile": RUNTIME_DEFAULT},
        # Onto the node where this layer's analyst pod is running, and only there.
        "affinity": {
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {
                            "matchLabels": {
                                env.COMPONENT_LABEL: env.ANALYST_COMPONENT,
                                LAYER_LABEL: layer.value,
                                JOB_NAME_LABEL: analyst_job,
                            }
                        },
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        "tolerations": tolerations,
        "containers": [
            {
                "name": "readings",
                "image": image,
                "workingDir": env.APP_DIR,
                "command": ["python", "-m", "app.controller", "guest-readings"],
                "resources": COMPARISON_RESOURCES,
                "securityContext": no_privilege(),
            }
        ],
    }
    return {
        "backoffLimit": 0,
        "activeDeadlineSeconds": COMPARISON_DEADLINE_SECONDS,
        "template": {
            "metadata": {"labels": layer_labels(env.COMPARISON_COMPONENT, layer)},
            "spec": pod,
        },
    }
