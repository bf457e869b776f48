"""Builds the supplier API's pod spec and command line, as plain Kubernetes dicts.

Pure, like infra/pod_specs.py, whose shared pieces (the app user, the hardening, the node
architecture) it uses: an ordinary, fully hardened pod outside the sandbox.
"""

from __future__ import annotations

from typing import Any

from app.core import cluster_env as env
from app.core.control_case import renamed
from app.core.ids import OTHER_CASE_ID, other_case_id

from .pod_specs import (
    APP_UID,
    RUNTIME_DEFAULT,
    TMP_VOLUME,
    DeployValue,
    app_user,
    image_node_selector,
    no_privilege,
    secret_volume,
)

SUPPLIER_RESOURCES: dict[str, dict[str, str]] = {
    "requests": {"cpu": "50m", "memory": "64Mi"},
    "limits": {"cpu": "250m", "memory": "256Mi"},
}


def supplier_command(case_id: str) -> list[str]:
    """The supplier API's command line; the one place its flags are spelled.

    It serves the AccessDenied control's case too, under the id the controller asks for
    (`other_case_id`): the nono run's control shows the supplier API accepting a read of that
    case from the controller, which a role's proxy refuses. That case is the shipped template's
    folder, served under another id when the stack's own case is the template's.
    """
    template = f"{env.CASES_DIR}/{OTHER_CASE_ID}"
    control = (
        ["--case-dir-as", other_case_id(case_id), template]
        if renamed(case_id)
        else ["--case-dir", template]
    )
    return [
        "python",
        "-m",
        "app.supplier_api",
        "serve",
        "--case-dir",
        f"{env.CASES_DIR}/{case_id}",
        *control,
        "--key-file",
        f"{env.SUPPLIER_KEY_DIR}/{env.SUPPLIER_KEY_ITEM}",
        "--cert",
        f"{env.SUPPLIER_TLS_DIR}/tls.crt",
        "--key",
        f"{env.SUPPLIER_TLS_DIR}/tls.key",
        # Every interface of its pod: the Services reach it on the pod IP.
        "--host",
        "0.0.0.0",
        "--port",
        str(env.SUPPLIER_PORT),
        "--log",
        env.SUPPLIER_LOG,
    ]


def supplier_pod_spec(*, image: DeployValue, case_id: str) -> dict[str, Any]:
    """The supplier API's pod: an ordinary, fully hardened pod outside the sandbox."""
    return {
        "automountServiceAccountToken": False,
        "nodeSelector": image_node_selector(),
        "securityContext": {
            **app_user(),
            "fsGroup": APP_UID,
            "seccompProfile": dict(RUNTIME_DEFAULT),
        },
        "containers": [
            {
                "name": "supplier-api",
                "image": image,
                "workingDir": env.APP_DIR,
                "command": supplier_command(case_id),
                "ports": [{"name": "https", "containerPort": env.SUPPLIER_PORT}],
                "readinessProbe": {"tcpSocket": {"port": "https"}, "periodSeconds": 5},
                "resources": SUPPLIER_RESOURCES,
                "securityContext": no_privilege(),
                "volumeMounts": [
                    {"name": "supplier-key", "mountPath": env.SUPPLIER_KEY_DIR, "readOnly": True},
                    {"name": "supplier-tls", "mountPath": env.SUPPLIER_TLS_DIR, "readOnly": True},
                    {"name": "request-log", "mountPath": env.SUPPLIER_LOG_DIR},
                    {"name": TMP_VOLUME, "mountPath": "/tmp"},
                ],
            }
        ],
        "volumes": [
            secret_volume("supplier-key", env.SUPPLIER_KEY_SECRET, env.SUPPLIER_KEY_ITEM),
            secret_volume("supplier-tls", env.SUPPLIER_TLS_SECRET, "tls.crt", "tls.key"),
            {"name": "request-log", "emptyDir": {}},
            {"name": TMP_VOLUME, "emptyDir": {}},
        ],
    }
