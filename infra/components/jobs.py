"""Analyst Jobs: one Kubernetes Job per enabled confinement layer, each a run of the case, and the
ordinary comparison pod beside each when asked for."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

from app.core import cluster_env as env
from app.core.roles import Layer

from ..comparison_pod import comparison_job_spec
from ..manifests import COMPARISON_JOB_PREFIX, job_metadata
from ..naming import NAME_SUFFIX_BYTES, job_name, spec_digest
from ..pod_specs import JobInputs, JobSettings, job_spec
from .options import child_options


@dataclass(frozen=True)
class DeployedInputs:
    """What only the deployment knows: each an Output, and a leaf of the Job's spec."""

    image: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    role_name: pulumi.Input[str]
    # The sandbox RuntimeClass's scheduling.tolerations, for the ordinary comparison pod.
    tolerations: pulumi.Input[list[dict[str, Any]]]


class AnalystJobs(pulumi.ComponentResource):
    """Runs the case once per layer in the sandbox; each Job's log is its check list.

    A Job's spec is built from the stack's settings with only the image, the bucket and the
    role's name as Outputs, so a preview shows (and the policy pack judges) every field of the
    pod while the image is not yet built. Its name ends in a random id whose keeper is the
    spec's digest (infra/naming.py): any change, back to an earlier spec included, is a new Job,
    created before the old one is deleted. A Job has no TTL (infra/pod_specs.py), so nothing
    but the stack removes it, and a `pulumi refresh` finds every finished Job it lists: refresh
    and `up` never run a finished case again. What must exist before a pod starts
    (the supplier API, the Pod Identity association, the sandbox RuntimeClass) comes in through
    `opts.depends_on`.
    """

    job_names: dict[str, pulumi.Output[str]]
    comparison_job_names: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        settings: JobSettings,
        deployed: DeployedInputs,
        *,
        provider: k8s.Provider,
        random_provider: random.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:jobs:AnalystJobs", name, None, opts)
        self._settings = settings
        self._random = pulumi.ResourceOptions(parent=self, provider=random_provider)
        job_opts = child_options(self, opts, provider)
        self.job_names = {}
        self.comparison_job_names = {}
        for layer in settings.layers:
            spec = job_spec(self._job_inputs(layer, deployed))
            resolved = pulumi.Output.all(
                deployed.image, deployed.bucket_name, deployed.role_name
            ).apply(functools.partial(self._resolved_spec, layer, deployed))
            created = self._job(f"{name}-{layer.value}", layer, spec, resolved, job_opts)
            self.job_names[layer.value] = created.metadata.name
            if settings.comparison_pod:
                self.comparison_job_names[layer.value] = self._comparison(
                    name, layer, deployed, created, provider
                )
        self.register_outputs(
            {"job_names": self.job_names, "comparison_job_names": self.comparison_job_names}
        )

    def _resolved_spec(
        self, layer: Layer, deployed: DeployedInputs, values: list[str]
    ) -> dict[str, Any]:
        image, bucket, role_name = values
        inputs = self._job_inputs(layer, deployed, image=image, bucket=bucket, role_name=role_name)
        return job_spec(inputs)

    def _job_inputs(self, layer: Layer, deployed: DeployedInputs, **resolved: Any) -> JobInputs:
        return self._settings.inputs(
            layer,
            image=resolved.get("image", deployed.image),
            bucket=resolved.get("bucket", deployed.bucket_name),
            role_name=resolved.get("role_name", deployed.role_name),
        )

    def _job(
        self,
        resource_name: str,
        layer: Layer,
        spec: dict[str, Any],
        resolved: pulumi.Output[dict[str, Any]],
        opts: pulumi.ResourceOptions,
        *,
        prefix: str = "analyst",
        component: str = env.ANALYST_COMPONENT,
    ) -> k8s.batch.v1.Job:
        trigger = self._settings.run_trigger
        suffix = random.RandomId(
            f"{resource_name}-name",
            byte_length=NAME_SUFFIX_BYTES,
            keepers={"spec": resolved.apply(lambda done: spec_digest(trigger, done))},
            opts=self._random,
        ).hex
        name = suffix.apply(lambda drawn: job_name(layer, trigger, drawn, prefix=prefix))
        return k8s.batch.v1.Job(
            resource_name,
            metadata=cast(
                "k8s.meta.v1.ObjectMetaArgsDict",
                job_metadata(layer, self._settings.namespace, name, component),
            ),
            # The pure builder's dict is the Job spec in the API's own field names, which is
            # what the SDK's TypedDict describes; its Outputs are leaves.
            spec=cast("k8s.batch.v1.JobSpecArgsDict", spec),
            opts=opts,
        )

    def _comparison(
        self,
        name: str,
        layer: Layer,
        deployed: DeployedInputs,
        analyst: k8s.batch.v1.Job,
        provider: k8s.Provider,
    ) -> pulumi.Output[str]:
        analyst_name = analyst.metadata.name
        spec = comparison_job_spec(
            image=deployed.image,
            layer=layer,
            analyst_job=analyst_name,
            tolerations=deployed.tolerations,
        )
        resolved = pulumi.Output.all(deployed.image, analyst_name, deployed.tolerations).apply(
            lambda values: comparison_job_spec(
                image=values[0], layer=layer, analyst_job=values[1], tolerations=values[2]
            )
        )
        # After the analyst Job: its pod must be on a node for this one's affinity to place
        # it there.
        created = self._job(
            f"{name}-compare-{layer.value}",
            layer,
            spec,
            resolved,
            pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[analyst]),
            prefix=COMPARISON_JOB_PREFIX,
            component=env.COMPARISON_COMPONENT,
        )
        return created.metadata.name
