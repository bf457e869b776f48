"""The environment contract between the analyst Job and the controller in cluster mode.

One module names every variable the Job sets and every path it mounts, so the controller's
cluster-mode settings can be matched against it (or import it) rather than retyped.
"""

from __future__ import annotations

from typing import Final

# Variable names the controller reads in the Job.
MODE: Final = "ANALYST_MODE"
BUCKET: Final = "ANALYST_BUCKET"
REGION: Final = "AWS_REGION"
MODEL_ID: Final = "ANALYST_MODEL_ID"
# The role the controller must find itself acting as (its STS caller identity check).
ROLE_NAME: Final = "ANALYST_ROLE_NAME"
SUPPLIER_API_URL: Final = "SUPPLIER_API_URL"
SUPPLIER_API_ALIAS_URL: Final = "SUPPLIER_API_ALIAS_URL"
SUPPLIER_KEY_FILE: Final = "SUPPLIER_KEY_FILE"
SUPPLIER_CA_FILE: Final = "SUPPLIER_CA_FILE"
# The analyst image's reference (by digest, as the pod's `image` names it): the code revision a
# cluster run's report gives, since a pod cannot read its own image digest otherwise.
IMAGE: Final = "ANALYST_IMAGE"
# Set when the stack bounds the pod's egress (egressPolicy): the `host:port` destinations, space
# separated, that no rule of the pod's network policy names, which the Job must fail to reach.
EGRESS_DENIED: Final = "ANALYST_EGRESS_DENIED"
# Set in the pod by the EKS Pod Identity webhook, not by the Job: where the agent serves the
# pod's credentials, and the projected token file that authorises the request.
POD_IDENTITY_URI: Final = "AWS_CONTAINER_CREDENTIALS_FULL_URI"
POD_IDENTITY_TOKEN_FILE: Final = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"

# Labels the stack's pods carry: the component (app.kubernetes.io/name) and, for an analyst
# Job's pod and the ordinary pod compared with it, the layer.
COMPONENT_LABEL: Final = "app.kubernetes.io/name"
LAYER_LABEL: Final = "procurement-analyst/layer"
ANALYST_COMPONENT: Final = "analyst"
COMPARISON_COMPONENT: Final = "ordinary-comparison"

# The value of ANALYST_MODE that selects S3, Bedrock and the in-cluster supplier API.
CLUSTER_MODE: Final = "cluster"

# Set only by `python -m rehearsal`, which runs a Job's pod on one machine: the offline model
# stands in for Bedrock and the image-only checks SKIP with that reason. No manifest may set it
# (a test and the policy pack check every container of every object the program renders).
REHEARSAL: Final = "ANALYST_REHEARSAL"
REHEARSAL_ON: Final = "1"

# Where the image keeps the application and its sample cases.
APP_DIR: Final = "/opt/analyst"
CASES_DIR: Final = f"{APP_DIR}/cases"

# Mount points of the supplier's key, its TLS pair and the CA that signed it.
SUPPLIER_KEY_DIR: Final = "/opt/supplier-key"
SUPPLIER_TLS_DIR: Final = "/opt/supplier-tls"
SUPPLIER_CA_DIR: Final = "/opt/supplier-ca"
# The Kubernetes objects those mounts come from, and the item each holds.
SUPPLIER_KEY_SECRET: Final = "supplier-key"
SUPPLIER_TLS_SECRET: Final = "supplier-tls"
SUPPLIER_CA_CONFIGMAP: Final = "supplier-ca"
SUPPLIER_KEY_ITEM: Final = "api-key"
SUPPLIER_CA_ITEM: Final = "ca.crt"
# The mode of every file of a Secret volume the pods mount (the volumes' defaultMode): owner
# root, group the pod's fsGroup, readable by that group alone. A cluster run checks it.
SECRET_FILE_MODE: Final = 0o440

# The controller's private run directory; a writable emptyDir under a read-only root.
RUN_DIR: Final = "/var/lib/analyst"

SUPPLIER_PORT: Final = 8443
# The supplier API's own request log, in a writable emptyDir of its pod.
SUPPLIER_LOG_DIR: Final = "/var/lib/supplier-api"
SUPPLIER_LOG: Final = f"{SUPPLIER_LOG_DIR}/requests.jsonl"
SUPPLIER_SERVICE: Final = "supplier-api"
SUPPLIER_ALIAS_SERVICE: Final = "supplier-api-alias"


def service_host(service: str, namespace: str) -> str:
    """The cluster DNS name of a Service."""
    return f"{service}.{namespace}.svc.cluster.local"


def supplier_url(service: str, namespace: str) -> str:
    """The HTTPS URL the controller uses for one of the supplier API's two names."""
    return f"https://{service_host(service, namespace)}:{SUPPLIER_PORT}"


def job_env(
    *, image: str, namespace: str, bucket: str, region: str, model_id: str, role_name: str
) -> dict[str, str]:
    """Every variable the analyst container gets, by name."""
    return {
        MODE: CLUSTER_MODE,
        IMAGE: image,
        BUCKET: bucket,
        REGION: region,
        MODEL_ID: model_id,
        ROLE_NAME: role_name,
        SUPPLIER_API_URL: supplier_url(SUPPLIER_SERVICE, namespace),
        SUPPLIER_API_ALIAS_URL: supplier_url(SUPPLIER_ALIAS_SERVICE, namespace),
        SUPPLIER_KEY_FILE: f"{SUPPLIER_KEY_DIR}/{SUPPLIER_KEY_ITEM}",
        SUPPLIER_CA_FILE: f"{SUPPLIER_CA_DIR}/{SUPPLIER_CA_ITEM}",
    }
