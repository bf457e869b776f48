"""Analyst Jobs: one Kubernetes Job per enabled confinement layer, each a run of the case."""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from ..config import StackConfig
from ..pod_specs import LAYER_LABEL, JobInputs, job_name, job_spec, labels


class AnalystJobs(pulumi.ComponentResource):
    """Runs the case once per layer in the sandbox; each Job's log is its check list."""

    job_names: dict[str, pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        config: StackConfig,
        *,
        namespace: pulumi.Output[str],
        service_account: pulumi.Output[str],
        image: pulumi.Input[str],
        bucket_name: pulumi.Input[str],
        role_name: pulumi.Input[str],
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("analyst:analyst:AnalystJobs", name, None, opts)
        job_opts = pulumi.ResourceOptions(
            parent=self,
            provider=provider,
            # depends_on: the supplier API must be serving, and the Pod Identity association
            # must exist before the pod is admitted, or the pod starts without AWS credentials.
            depends_on=list(depends_on),
            # The name is fixed, so a replacement must delete the old Job first.
            delete_before_replace=True,
        )
        self.job_names = {}
        for layer in config.layers:
            spec = pulumi.Output.all(
                image=image,
                bucket=bucket_name,
                role_name=role_name,
                service_account=service_account,
                namespace=namespace,
            ).apply(
                lambda values, layer=layer: job_spec(
                    JobInputs(
                        layer=layer,
                        case_id=config.case_id,
                        region=config.region,
                        model_id=config.model_id,
                        **values,
                    )
                )
            )
            job = k8s.batch.v1.Job(
                f"{name}-{layer.value}",
                metadata={
                    "name": job_name(layer, config.run_trigger),
                    "namespace": namespace,
                    "labels": {**labels("analyst"), LAYER_LABEL: layer.value},
                    # The run takes minutes and its verdict is the log, not the deployment:
                    # `pulumi up` returns once the Job exists; follow it with kubectl logs -f.
                    "annotations": {"pulumi.com/skipAwait": "true"},
                },
                spec=spec,
                opts=job_opts,
            )
            self.job_names[layer.value] = job.metadata.name
        self.register_outputs({"job_names": self.job_names})
