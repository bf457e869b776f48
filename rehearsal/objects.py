"""The objects the rehearsal runs: exactly those `make manifests` renders, from the same builders.

`infra.render_manifests.stack_objects` is what the Pulumi program registers (a test proves it);
the rehearsal gives it its own deploy-time values (the image stand-ins, moto's bucket, the
role's name), then picks out what it runs. A test may change the rendered objects on purpose
before they run (a `Tweak`), never a second hand-written copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from app.core import cluster_env as env
from app.core.roles import Layer
from infra.config import StackConfig
from infra.manifests import ANALYST_SERVICE_ACCOUNT
from infra.render_manifests import DeployValues, stack_config, stack_objects

from .dns import CLUSTER_DNS
from .image_stand_in import ANALYST_IMAGE, SUPPLIER_IMAGE

Manifest = dict[str, Any]
# Changes the rendered objects in place before the rehearsal reads them (the break tests).
Tweak = Callable[[list[Manifest]], None]

STACK: Final = "dev"
BUCKET: Final = "procurement-analyst-rehearsal"
ROLE_NAME: Final = "procurement-analyst-rehearsal-role"
DEPLOY_VALUES: Final = DeployValues(
    analyst_image=ANALYST_IMAGE.reference,
    supplier_image=SUPPLIER_IMAGE.reference,
    bucket=BUCKET,
    role_name=ROLE_NAME,
    # The policy's DNS rule is rendered for the rehearsal's resolver, as the stack's is for the
    # cluster's (infra/egress.py).
    cluster_dns=CLUSTER_DNS,
)


class ObjectsError(ValueError):
    """The rendered objects lack what the rehearsal must run; the message names it."""


@dataclass(frozen=True)
class StackUnderRehearsal:
    config: StackConfig
    namespace: str
    objects: list[Manifest]
    analyst_jobs: dict[Layer, Manifest]
    comparison_jobs: dict[Layer, Manifest]
    supplier: Manifest
    services: list[Manifest]
    service_account: str

    def find(self, kind: str, name: str) -> Manifest:
        for manifest in self.objects:
            if manifest["kind"] == kind and manifest["metadata"]["name"] == name:
                return manifest
        raise ObjectsError(f"the stack renders no {kind} named {name!r}")


def _layer_of(job: Manifest) -> Layer:
    return Layer(job["metadata"]["labels"][env.LAYER_LABEL])


def render(
    tweak: Tweak | None = None, settings: dict[str, str] | None = None
) -> StackUnderRehearsal:
    """The dev stack's objects, with `settings` over its config (as `pulumi config set` would)."""
    config = stack_config(STACK, settings)
    objects = copy.deepcopy(stack_objects(config, DEPLOY_VALUES))
    if tweak is not None:
        tweak(objects)
    jobs = [m for m in objects if m["kind"] == "Job"]
    component = env.COMPONENT_LABEL
    analyst = {
        _layer_of(j): j for j in jobs if j["metadata"]["labels"][component] == env.ANALYST_COMPONENT
    }
    comparison = {
        _layer_of(j): j
        for j in jobs
        if j["metadata"]["labels"][component] == env.COMPARISON_COMPONENT
    }
    deployments = [m for m in objects if m["kind"] == "Deployment"]
    if len(deployments) != 1:
        raise ObjectsError(f"expected the supplier Deployment, found {len(deployments)}")
    if not analyst:
        raise ObjectsError("the stack renders no analyst Job (config key layers)")
    return StackUnderRehearsal(
        config=config,
        namespace=config.namespace,
        objects=objects,
        analyst_jobs=analyst,
        comparison_jobs=comparison,
        supplier=deployments[0],
        services=[m for m in objects if m["kind"] == "Service"],
        service_account=ANALYST_SERVICE_ACCOUNT,
    )
