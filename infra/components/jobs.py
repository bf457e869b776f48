"""Analyst Jobs: one Kubernetes Job per enabled confinement layer, each a run of the case."""

from __future__ import annotations

import functools
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from app.core import cluster_env as env
from app.core.roles import Layer

from ..config import StackConfig
from ..manifests import ANALYST_SERVICE_ACCOUNT, analyst_job, comparison_job, job_metadata
from ..pod_specs import JobInputs
from .options import child_options


class AnalystJobs(pulumi.ComponentResource):
    """Runs the case once per layer in the sandbox; each Job's log is its check list.

    A Job's name carries a digest of its spec (infra/naming.py), so any change to what it would
    run is a new Job beside the old one, never a replacement under the same name. The old Job
    is retained on delete: Pulumi forgets it, and Kubernetes removes it with its pod and log
    when its TTL runs out. What must exist before a pod starts (the supplier API, the Pod
    Identity association, the sandbox RuntimeClass) comes in through `opts.depends_on`.
    """

    job_names: dict[str, pulumi.Output[str]]
    comparison_job_names: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        *,
        image: pulumi.Input[str],
        bucket_name: pulumi.Input[str],
        role_name: pulumi.Input[str],
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:jobs:AnalystJobs", name, None, opts)
        job_opts = child_options(self, opts, provider, retain_on_delete=True)
        self.job_names = {}
        self.comparison_job_names = {}
        for layer in config.layers:
            job = pulumi.Output.all(image, bucket_name, role_name).apply(
                functools.partial(_render, config, layer)
            )
            created = k8s.batch.v1.Job(
                f"{name}-{layer.value}",
                # Only the name waits for the spec; the rest is known in a preview too.
                metadata=cast(
                    "k8s.meta.v1.ObjectMetaArgsDict",
                    job_metadata(layer, config.namespace, job.apply(_name)),
                ),
                spec=job.apply(_spec),
                opts=job_opts,
            )
            self.job_names[layer.value] = created.metadata.name
            if config.comparison_pod:
                self.comparison_job_names[layer.value] = self._comparison(
                    name, config, layer, image, provider, created
                )
        self.register_outputs(
            {"job_names": self.job_names, "comparison_job_names": self.comparison_job_names}
        )

    def _comparison(
        self,
        name: str,
        config: StackConfig,
        layer: Layer,
        image: pulumi.Input[str],
        provider: k8s.Provider,
        analyst: k8s.batch.v1.Job,
    ) -> pulumi.Output[str]:
        # After the analyst Job: its pod must be on a node for this one's affinity to place
        # it there.
        job = pulumi.Output.from_input(image).apply(
            lambda ref: comparison_job(
                layer, config.namespace, image=ref, run_trigger=config.run_trigger
            )
        )
        created = k8s.batch.v1.Job(
            f"{name}-compare-{layer.value}",
            metadata=cast(
                "k8s.meta.v1.ObjectMetaArgsDict",
                job_metadata(layer, config.namespace, job.apply(_name), env.COMPARISON_COMPONENT),
            ),
            spec=job.apply(_spec),
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=[analyst], retain_on_delete=True
            ),
        )
        return created.metadata.name


def _render(config: StackConfig, layer: Layer, values: list[str]) -> dict[str, Any]:
    image, bucket, role_name = values
    return analyst_job(
        JobInputs(
            layer=layer,
            image=image,
            namespace=config.namespace,
            case_id=config.case_id,
            bucket=bucket,
            region=config.region,
            model_id=config.model_id,
            role_name=role_name,
            service_account=ANALYST_SERVICE_ACCOUNT,
            target=config.runtime_target,
            node_apparmor=config.node_app_armor,
        ),
        config.run_trigger,
    )


def _name(manifest: dict[str, Any]) -> str:
    return str(manifest["metadata"]["name"])


def _spec(manifest: dict[str, Any]) -> k8s.batch.v1.JobSpecArgsDict:
    # The pure builder's dict is the Job spec in the API's own field names, which is what the
    # SDK's TypedDict describes.
    return cast("k8s.batch.v1.JobSpecArgsDict", manifest["spec"])
